/** Runs async work over an iterable (sync or async) with at most `limit` items in flight, in input order of start. */
export async function forEachLimit<T>(items: Iterable<T> | AsyncIterable<T>, limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = (Symbol.asyncIterator in items ? (items as AsyncIterable<T>)[Symbol.asyncIterator]() : (items as Iterable<T>)[Symbol.iterator]()) as
    | AsyncIterator<T>
    | Iterator<T>;
  let failed: unknown;
  let lock: Promise<unknown> = Promise.resolve();
  /** Pulls the next item (serialised: async iterators must not be pulled concurrently). */
  const next = (): Promise<IteratorResult<T>> => {
    const p = lock.then(() => it.next());
    lock = p.catch(() => undefined);
    return p;
  };
  const worker = async (): Promise<void> => {
    while (failed === undefined) {
      const r = await next();
      if (r.done) return;
      try {
        await fn(r.value);
      } catch (err) {
        failed ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker));
  if (failed !== undefined) throw failed;
}
