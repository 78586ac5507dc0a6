/**
 * Calls on a remote that name no single entry (docs/development/kodo-protocol.md §8.5 fetch and prefetch, §8.6 buckets and domains, §9 pfop and prefop): the buckets
 * of the key pair (`GET /buckets` on the uc host, also the key check of `remote add`), a bucket's domains
 * (`/v3/domains`), fetch of a URL into a bucket (`/fetch/<EncodedURL>/to/<EncodedEntryURI>` on io, synchronous),
 * mirror prefetch (`/prefetch/<EncodedEntryURI>`), persistent fops (`/pfop/` on api → persistentId) and their
 * status (`/status/get/prefop?id=`). Every call is signed with the `Qiniu` management token; non-200 answers
 * throw a TransferError with the reason.
 */
import qiniu from 'qiniu';
import { urlsafeB64Encode } from '../auth/base64.js';
import { encodedEntry, type KodoClient } from './client.js';
import { describeStatus, TransferError } from './errors.js';
import { ucHostOf } from './hosts.js';

/** The answer of a fetch: the stored entry. */
export interface FetchAnswer {
  key: string;
  hash: string;
  fsize: number;
  mimeType: string;
}

/** Bucket names of the remote's key pair, sorted. Throws (401) when the keys are refused. */
export async function listBuckets(client: KodoClient): Promise<string[]> {
  const p = client.profile;
  const url = `${p.https ? 'https' : 'http'}://${ucHostOf(p)}/buckets`;
  const headers = { authorization: qiniu.util.generateAccessTokenV2(client.mac, url, 'GET', 'application/x-www-form-urlencoded', '') as string, 'content-type': 'application/x-www-form-urlencoded' };
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message;
    throw new TransferError(`remote ${p.name}: cannot reach ${new URL(url).origin} (${cause})`);
  }
  const text = await res.text();
  if (res.status !== 200) throw new TransferError(describeStatus(res.status, text, `remote ${p.name}`), res.status);
  const names = JSON.parse(text) as unknown;
  if (!Array.isArray(names)) throw new TransferError(`remote ${p.name}: /buckets answered no list`);
  return names.map(String).sort();
}

/** Domains bound to `bucket` (names; `.`-prefixed wildcard entries left out). */
export async function listDomains(client: KodoClient, bucket: string): Promise<string[]> {
  await client.checkBucket(bucket);
  const list = await client.call<Array<{ domain?: string }> | null>(bucket, 'uc', 'GET', `/v3/domains?tbl=${encodeURIComponent(bucket)}`);
  return (list ?? []).map((d) => d.domain ?? '').filter((d) => d !== '' && !d.startsWith('.'));
}

/** Fetches `url` into `bucket:key` and waits for it (synchronous fetch on the io host). */
export async function fetchUrl(client: KodoClient, url: string, bucket: string, key: string): Promise<FetchAnswer> {
  const answer = await client.call<Partial<FetchAnswer> | null>(bucket, 'io', 'POST', `/fetch/${urlsafeB64Encode(url)}/to/${encodedEntry(bucket, key)}`);
  return { key: answer?.key ?? key, hash: answer?.hash ?? '', fsize: answer?.fsize ?? 0, mimeType: answer?.mimeType ?? '' };
}

/** Refreshes `bucket:key` from the bucket's mirror origin (prefetch). */
export async function prefetch(client: KodoClient, bucket: string, key: string): Promise<void> {
  await client.call(bucket, 'io', 'POST', `/prefetch/${encodedEntry(bucket, key)}`);
}

/** Options of a persistent fop request. */
export interface PfopOptions {
  pipeline?: string;
  notifyUrl?: string;
  force?: boolean;
}

/** Submits persistent fops (`;`-separated) on `bucket:key`; answers the persistentId. */
export async function pfop(client: KodoClient, bucket: string, key: string, fops: string, o: PfopOptions = {}): Promise<string> {
  const form = new URLSearchParams({ bucket, key, fops });
  if (o.pipeline) form.set('pipeline', o.pipeline);
  if (o.notifyUrl) form.set('notifyURL', o.notifyUrl);
  if (o.force) form.set('force', '1');
  const answer = await client.call<{ persistentId?: string } | null>(bucket, 'api', 'POST', '/pfop/', { body: form.toString() });
  if (!answer?.persistentId) throw new TransferError(`remote ${client.name}: pfop answered no persistentId`);
  return answer.persistentId;
}

/**
 * The status of a persistentId (the server's JSON: `code` 0 done, 1 waiting, 2 running, 3 failed; `items`).
 * `bucket` picks the api host; without one, the first bucket of the key pair does (its region's api host).
 */
export async function prefop(client: KodoClient, id: string, bucket?: string): Promise<Record<string, unknown>> {
  const b = bucket ?? (await listBuckets(client))[0];
  if (b === undefined) throw new TransferError(`remote ${client.name}: no bucket to find the api host by (name one: <remote>:<bucket>)`);
  const answer = await client.call<Record<string, unknown> | null>(b, 'api', 'GET', `/status/get/prefop?id=${encodeURIComponent(id)}`);
  return answer ?? {};
}
