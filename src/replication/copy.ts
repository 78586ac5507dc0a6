/**
 * Brings one key of a source bucket in step at a replication target (ports/replication.ts): the source's CURRENT
 * state is copied, whatever the changes that led to it (the outbox coalesces them), so the destination converges.
 *
 * - Source entry absent (deleted, expired, moved away; in a versioned bucket a delete marker is current): with the
 *   rule's `deletes`, S3 DeleteObject at the destination (idempotent: 204 whether or not it was there); without,
 *   nothing.
 * - Present: HEAD at the destination first. Already in step — same size, the same content-type, user metadata and
 *   stored headers, and an ETag that is the source's MD5 or the one this rule's last copy of the same source state
 *   got (`copied`) — nothing is copied, so a retry after a copy whose completion was not recorded never copies
 *   twice. Otherwise the content is streamed from the blob store (never buffered whole): one PutObject (with
 *   Content-MD5 when the source's MD5 is known: the destination verifies the bytes) up to
 *   GRANARY_REPLICATION_MULTIPART_BYTES, a multipart upload of 8 MiB parts above (@aws-sdk/lib-storage: at most
 *   two parts in memory; an interrupted one is aborted and started over at the next attempt).
 * - What is carried: the bytes, Content-Type, `x-amz-meta-*` (Kodo `x-qn-meta-*`), Cache-Control,
 *   Content-Disposition, Content-Encoding, Content-Language, Expires; the rule's storage class. Not carried:
 *   object tags, ACLs, the upload time, other versions (the current state only), reserved `@` metadata.
 *
 * Errors: the destination's (an S3ServiceException: its code and message are what the status shows), the outbound
 * guard's (OutboundError), the blob store's.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client, type StorageClass } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Granary } from '../context.js';
import { ThrottleStream, type Pacer } from '../objects/throttle.js';
import { findLiveObject } from '../objects/read.js';
import { readObject } from '../objects/verified-read.js';
import type { ObjectRecord } from '../ports/meta.js';
import type { ReplicationRule, ReplicationTarget } from '../ports/replication.js';

/** Multipart part size, bytes. */
export const REPLICATION_PART_BYTES = 8 * 1024 * 1024;

/** What one attempt did. */
export interface CopyOutcome {
  /** `copied`, `in-step` (nothing to do), `deleted`, `delete-skipped` (the rule keeps deletes). */
  action: 'copied' | 'in-step' | 'deleted' | 'delete-skipped';
  /** `<source identity> <destination ETag>` after a copy or an in-step check. */
  copied?: string;
  /** Bytes sent. */
  bytes: number;
}

/** What a copy sends besides the bytes. */
interface Described {
  contentType: string;
  metadata: Record<string, string>;
  headers: { CacheControl?: string; ContentDisposition?: string; ContentEncoding?: string; ContentLanguage?: string; Expires?: Date };
}

/** A header value as Node sends it: UTF-8 bytes of non-ASCII text as latin1 characters (the receiver decodes them). */
function wire(v: string): string {
  return /^[\x20-\x7e\t]*$/.test(v) ? v : Buffer.from(v, 'utf8').toString('latin1');
}

/** The metadata and headers of `rec` as S3 PutObject takes them. */
function describe(rec: ObjectRecord): Described {
  const metadata: Record<string, string> = {};
  const headers: Described['headers'] = {};
  for (const [name, value] of Object.entries(rec.meta)) {
    if (name.startsWith('@')) continue;
    if (!name.startsWith('!')) {
      metadata[name.toLowerCase()] = wire(value);
      continue;
    }
    const h = name.slice(1).toLowerCase();
    if (h === 'cache-control') headers.CacheControl = wire(value);
    else if (h === 'content-disposition') headers.ContentDisposition = wire(value);
    else if (h === 'content-encoding') headers.ContentEncoding = wire(value);
    else if (h === 'content-language') headers.ContentLanguage = wire(value);
    else if (h === 'expires') {
      const d = new Date(value);
      if (!Number.isNaN(d.getTime())) headers.Expires = d;
    }
  }
  return { contentType: rec.mimeType || 'application/octet-stream', metadata, headers };
}

/** The source state a copy reflects: content, type, metadata and the rule's storage class. */
export function sourceIdentity(rec: ObjectRecord, rule: ReplicationRule): string {
  const meta = Object.entries(rec.meta).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([rec.hash, rec.md5, rec.fsize, rec.mimeType, meta, rule.storageClass ?? '']))
    .digest('base64url')
    .slice(0, 22);
}

/** HTTP status of an SDK error, if any. */
export function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/** Whether the destination's HEAD answer matches what a copy of `rec` would write. */
function inStep(
  head: { ContentLength?: number; ETag?: string; ContentType?: string; Metadata?: Record<string, string> } & Described['headers'],
  rec: ObjectRecord,
  want: Described,
  etagOk: (etag: string) => boolean,
): boolean {
  if (head.ContentLength !== rec.fsize || !head.ETag || !etagOk(head.ETag)) return false;
  if ((head.ContentType ?? '') !== want.contentType) return false;
  const got = head.Metadata ?? {};
  const names = new Set([...Object.keys(got), ...Object.keys(want.metadata)]);
  for (const n of names) if (got[n] !== want.metadata[n]) return false;
  for (const h of ['CacheControl', 'ContentDisposition', 'ContentEncoding', 'ContentLanguage'] as const) {
    if ((head[h] ?? undefined) !== want.headers[h]) return false;
  }
  return true;
}

/** Options of one attempt. */
export interface CopyContext {
  client: S3Client;
  target: ReplicationTarget;
  rule: ReplicationRule;
  /** The bandwidth limit of the target, shared by its copies (absent: none). */
  pacer?: Pacer;
  /** Objects above this size go by multipart upload. */
  multipartBytes: number;
  /** What the rule's last copy of this key wrote (`ReplicationItem.copied`). */
  previous?: string;
  signal: AbortSignal;
}

/** One attempt to bring `bucket`/`key` in step (see the module comment). */
export async function replicateKey(g: Granary, bucket: string, key: string, cx: CopyContext): Promise<CopyOutcome> {
  const { client, target, rule, signal } = cx;
  const rec = await findLiveObject(g, bucket, key);
  if (!rec) {
    if (!rule.deletes) return { action: 'delete-skipped', bytes: 0 };
    await client.send(new DeleteObjectCommand({ Bucket: target.bucket, Key: key }), { abortSignal: signal });
    return { action: 'deleted', bytes: 0 };
  }
  const identity = sourceIdentity(rec, rule);
  const want = describe(rec);
  const md5Etag = rec.md5 ? `"${rec.md5}"` : undefined;
  const [prevIdentity, prevEtag] = (cx.previous ?? '').split(' ');
  const etagOk = (etag: string): boolean => etag === md5Etag || (prevIdentity === identity && etag === prevEtag);
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: target.bucket, Key: key }), { abortSignal: signal });
    if (inStep(head, rec, want, etagOk)) return { action: 'in-step', copied: `${identity} ${head.ETag}`, bytes: 0 };
  } catch (err) {
    // 404: not there yet. Anything else (403 of a wrong key…): the write below fails with the destination's own
    // error code and message (a HEAD answer has no body to say it).
    if (signal.aborted) throw err;
  }
  const params = {
    Bucket: target.bucket,
    Key: key,
    ContentType: want.contentType,
    Metadata: want.metadata,
    ...want.headers,
    ...(rule.storageClass ? { StorageClass: rule.storageClass as StorageClass } : {}),
  };
  const body = (): Readable => {
    const src = readObject(g, rec);
    return cx.pacer ? src.pipe(new ThrottleStream(cx.pacer)) : src;
  };
  let etag: string | undefined;
  if (rec.fsize <= cx.multipartBytes) {
    const out = await client.send(
      new PutObjectCommand({
        ...params,
        Body: body(),
        ContentLength: rec.fsize,
        ...(rec.md5 ? { ContentMD5: Buffer.from(rec.md5, 'hex').toString('base64') } : {}),
      }),
      { abortSignal: signal },
    );
    etag = out.ETag;
  } else {
    const upload = new Upload({ client, params: { ...params, Body: body() }, partSize: REPLICATION_PART_BYTES, queueSize: 2, leavePartsOnError: false });
    const abort = (): void => void upload.abort().catch(() => undefined);
    signal.addEventListener('abort', abort, { once: true });
    try {
      etag = (await upload.done()).ETag;
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }
  return { action: 'copied', copied: `${identity} ${etag ?? ''}`, bytes: rec.fsize };
}
