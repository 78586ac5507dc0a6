/**
 * Mirror source ("镜像回源", docs/development/kodo-protocol.md §8.6 `image`, §8.5 `prefetch`, §11): a bucket with a `source` URL pulls a
 * key that is missing from `<source>/<key>` on download, stores it as the entry (through fetchToEntry, i.e. the
 * outbound guard and the one putObject path) and serves it; `prefetch` re-pulls a key and replaces the entry.
 *
 * Concurrent misses for one key are pulled once: the first miss starts the pull and registers its promise under
 * bucket + key (per Granary instance); later misses await the same promise, then serve the stored entry.
 *
 * Error mapping (documented in docs/buckets/mirror.md, "Fetch errors"):
 * - download miss: origin 404 → 404 `Document not found`; refused by the outbound guard → 403 (message names
 *   GRANARY_OUTBOUND_ALLOW); any other origin failure (non-200 status, unreachable, timeout, body over
 *   GRANARY_FETCH_MAX_SIZE, bad redirect) → 478 with the cause in the message; storing failed → 599.
 * - prefetch: bucket without a source → 400; guard → 403; every origin failure including 404 → 478.
 * Keys with a `.` or `..` path segment are never sent to the origin (URL normalisation would change the path):
 * such a miss is a plain 404, such a prefetch 478.
 */
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import type { BucketRecord, ObjectRecord } from '../../ports/meta.js';
import { findLiveObject, isLive } from '../read.js';
import { fetchToEntry, type FetchSource } from './fetch-to-entry.js';

/**
 * Pulls in flight per Granary instance, keyed by `<bucket>:<key>` (bucket names never contain `:`). Per process on
 * purpose: with several worker processes (docs/operations/workers.md) a missing key requested on two workers at once is
 * pulled at most once per worker — never a wrong answer (each pull stores the whole object atomically; the last
 * commit wins with the same bytes), at worst one extra origin request per worker.
 */
const inflight = new WeakMap<Granary, Map<string, Promise<ObjectRecord>>>();

/**
 * The origin URL of `key` under a mirror `source`: the source's path (trailing slashes dropped) + `/` + the key
 * with each `/`-separated segment percent-encoded (encodeURIComponent); query of the source kept, fragment
 * dropped. Undefined when a key segment is `.` or `..` (not addressable without path normalisation).
 */
export function mirrorUrl(source: string, key: string): string | undefined {
  const segments = key.split('/');
  if (segments.some((s) => s === '.' || s === '..')) return undefined;
  const u = new URL(source);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/${segments.map(encodeURIComponent).join('/')}`;
  u.hash = '';
  return u.href;
}

/** The fetch source for `key` of a bucket with a mirror source (Host header from the bucket when set). */
function sourceOf(bucket: BucketRecord & { source: string }, key: string): FetchSource | undefined {
  const url = mirrorUrl(bucket.source, key);
  if (url === undefined) return undefined;
  return { url, ...(bucket.sourceHost ? { host: bucket.sourceHost } : {}) };
}

function hasSource(bucket: BucketRecord): bucket is BucketRecord & { source: string } {
  return bucket.source !== undefined && bucket.source !== '';
}

/**
 * The entry a download serves (docs/development/kodo-protocol.md §11, §8.6): `object` itself when it is live or the bucket has no
 * mirror source; otherwise the entry pulled from the source (single-flight per bucket + key). Call it after the
 * private-bucket token check. Throws 404 (origin 404), 403 (outbound guard), 478 (other origin failures), 599.
 */
export async function mirrorIfMissing(
  g: Granary,
  bucket: BucketRecord,
  key: string,
  object: ObjectRecord | undefined,
): Promise<ObjectRecord | undefined> {
  if (isLive(g, object) || !hasSource(bucket)) return object;
  const flights = inflight.get(g) ?? new Map<string, Promise<ObjectRecord>>();
  inflight.set(g, flights);
  const id = `${bucket.name}:${key}`;
  const running = flights.get(id);
  if (running) return running;
  const pull = pullMissing(g, bucket, key).finally(() => flights.delete(id));
  flights.set(id, pull);
  return pull;
}

/** One pull for a download miss; never replaces an entry stored meanwhile (insert-only commit). */
async function pullMissing(g: Granary, bucket: BucketRecord & { source: string }, key: string): Promise<ObjectRecord> {
  const src = sourceOf(bucket, key);
  if (!src) throw Errors.notFound();
  try {
    const result = await fetchToEntry(g, bucket.owner, src, { bucket: bucket.name, key }, { insertOnly: true });
    g.log.debug({ bucket: bucket.name, key, url: src.url }, 'mirror: pulled a missing key');
    g.metrics?.upload('mirror', result.record.fsize);
    return result.record;
  } catch (err) {
    if (isKodoError(err, 'fileExists')) {
      // Someone stored the key while the pull ran: serve their entry.
      const rec = await findLiveObject(g, bucket.name, key);
      if (rec) return rec;
    }
    g.log.info({ bucket: bucket.name, key, url: src.url, err: (err as Error).message }, 'mirror: pull failed');
    throw missFailure(err);
  }
}

/** Download-miss error mapping: 404 stays 404, the guard's 403 stays, other origin failures → 478. */
function missFailure(err: unknown): unknown {
  if (!isKodoError(err)) return err;
  switch (err.kind) {
    case 'originNotFound':
    case 'noSuchBucket':
      return Errors.notFound();
    case 'originTimeout':
    case 'originTooLarge':
    case 'badFetchUrl':
      return Errors.originFailed(err.message);
    default:
      return err;
  }
}

/**
 * `prefetch` (docs/development/kodo-protocol.md §8.5): re-pulls `<bucket>:<key>` from the bucket's mirror source and replaces the entry
 * (created when absent), for the caller `accessKey`. 631 missing bucket, 403 another account's bucket, 400 no
 * mirror source, 403 refused by the outbound guard, 478 any origin failure (404 included), 599 storing failed.
 */
export async function prefetchEntry(g: Granary, accessKey: string, bucketName: string, key: string): Promise<ObjectRecord> {
  const bucket = await authorizeBucket(g, accessKey, bucketName, { action: 'kodo/Prefetch', key });
  if (!hasSource(bucket)) throw Errors.noMirrorSource(bucket.name);
  const src = sourceOf(bucket, key);
  if (!src) throw Errors.originFailed(`key ${JSON.stringify(key)} has a '.' or '..' segment and cannot be pulled`);
  try {
    const { record } = await fetchToEntry(g, accessKey, src, { bucket: bucket.name, key });
    g.metrics?.upload('prefetch', record.fsize);
    return record;
  } catch (err) {
    if (isKodoError(err, 'originNotFound', 'originTimeout', 'originTooLarge', 'badFetchUrl')) {
      throw Errors.originFailed(err.message);
    }
    throw err;
  }
}
