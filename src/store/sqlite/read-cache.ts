/**
 * A per-process cache of download reads (`getBucketAndObject`: the bucket, the entry and an inline blob's bytes) for
 * the embedded SQLite store, valid exactly as long as the database is unchanged.
 *
 * Why: a 4 KiB GET spent about half its CPU (~30 of ~65 µs here) in that one read — 31 columns turned into JS
 * values, four B-tree lookups and the inline bytes — although the same few hot objects are read over and over.
 *
 * Validity: before every lookup the cache reads the connection's two change counters, `PRAGMA data_version`
 * (moves when another connection committed: another worker process, the CLI, a test's own connection) and
 * `total_changes()` (moves with every row this connection wrote, committed or rolled back); ~1.5 µs together.
 * When either moved, the whole cache is emptied first. A miss reads the database after that check, so an entry
 * never holds data older than the counters it is kept under: a commit landing between the check and the read is
 * seen by the next check, which empties the cache. Time-dependent facts (expiry against now, restores) are
 * decided by the callers on every request, not cached.
 *
 * Entries (and everything they hold but the inline Buffer) are frozen: every caller shares them, and a caller that
 * tried to change one would throw (modules are strict mode) instead of corrupting another request's answer.
 * Memory: at most `maxBytes` (GRANARY_READ_CACHE_SIZE), each entry counted as its inline bytes plus its key and a
 * fixed overhead; least recently used entries go first. `maxBytes` 0 turns the cache off.
 */
import { LRUCache } from 'lru-cache';

/** Bytes counted for an entry besides its inline blob and key: the record objects and the map's bookkeeping. */
const ENTRY_OVERHEAD_BYTES = 1024;

/** Freezes `value` and every plain object and array it holds; Buffers (typed arrays cannot be frozen) are left. */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
  return value;
}

/** See the module comment. `V` is what the read answers; `inlineBytes(v)` the blob bytes it holds (for the bound). */
export class ReadCache<V extends object> {
  private readonly cache: LRUCache<string, V> | undefined;
  private dataVersion = -1;
  private ownChanges = -1;
  /** Lookups answered from the cache, and reads made (tests and metrics). */
  hits = 0;
  misses = 0;

  /**
   * `counters()` answers [PRAGMA data_version, total_changes()] of the store's connection; `maxBytes` bounds the
   * cache (0: no cache, every lookup reads).
   */
  constructor(
    private readonly counters: () => [number, number],
    maxBytes: number,
    inlineBytes: (v: V) => number,
  ) {
    if (maxBytes > 0) {
      this.cache = new LRUCache<string, V>({
        maxSize: maxBytes,
        sizeCalculation: (v, k) => ENTRY_OVERHEAD_BYTES + 2 * k.length + inlineBytes(v),
      });
    }
  }

  /** The cached answer for `<bucket>/<key>`, or `read()`'s (frozen and kept) when there is none or it may be stale. */
  get(bucket: string, key: string, read: () => V): V {
    if (!this.cache) return read();
    const [dataVersion, ownChanges] = this.counters();
    if (dataVersion !== this.dataVersion || ownChanges !== this.ownChanges) {
      this.cache.clear();
      this.dataVersion = dataVersion;
      this.ownChanges = ownChanges;
    }
    // Length-prefixed: a bucket name from a URL may hold anything (`a/b` + `c` must not meet `a` + `b/c`).
    const id = `${bucket.length}:${bucket}/${key}`;
    const hit = this.cache.get(id);
    if (hit !== undefined) {
      this.hits++;
      return hit;
    }
    this.misses++;
    const value = deepFreeze(read());
    this.cache.set(id, value);
    return value;
  }
}
