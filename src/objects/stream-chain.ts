/**
 * `chain(source, …transforms, sink)`: `stream.pipeline` for the upload path, without its cost. Node's pipeline
 * creates an AbortController per call and aborts it when the pipeline ends, which builds a DOMException with a
 * stack trace every time: ~20–40 µs of the event loop per upload (about 8% of a 4 KiB form upload, profiled).
 * This does what pipeline does for plain streams: `pipe()` between neighbours (backpressure), `finished()` on
 * every stream; the first error, or a stream closing before it ended (a cut-off client: ERR_STREAM_PREMATURE_CLOSE),
 * destroys every stream with that error and rejects; it resolves once the sink has finished (and closed).
 *
 * Not for an HTTP server request as the source: pipeline destroys such a request without its socket, so the error
 * answer can still be sent; receive.ts keeps pipeline() for those (large bodies: the per-call cost does not show).
 */
import { finished, type Readable, type Writable } from 'node:stream';

/** Streams `source` through `rest` (transforms, then the sink); see the module comment. */
export function chain(source: Readable, ...rest: [...Array<Readable & Writable>, Writable]): Promise<void> {
  const streams: Array<Readable | Writable> = [source, ...rest];
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      for (const s of streams) if (!s.destroyed) s.destroy(err);
      reject(err);
    };
    const last = streams.length - 1;
    streams.forEach((s, i) => {
      if (i < last) finished(s, (err) => err && fail(err));
      else
        finished(s, { readable: false }, (err) => {
          if (err) return fail(err);
          settled = true;
          resolve();
        });
    });
    for (let i = 0; i < last; i++) (streams[i] as Readable).pipe(streams[i + 1] as Writable);
  });
}
