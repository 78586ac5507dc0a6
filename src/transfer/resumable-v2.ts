/**
 * Resumable upload v2 (docs/development/kodo-protocol.md §6) with parts of exactly 4 MiB — so each part is one etag block and the
 * object's etag is the plain qetag (§7) — several parts in flight, and a resume record per source.
 *
 * Wire: `POST /buckets/<bucket>/objects/<b64 key>/uploads` → `{uploadId, expireAt}`; `PUT …/<uploadId>/<n>` with
 * `Content-MD5` (hex) → `{etag, md5}`; `POST …/<uploadId>` with `{parts, fname, mimeType, metadata}` → `{hash,
 * key}`. All with `Authorization: UpToken <token>`.
 *
 * Resume (resume-records.ts): after each part, the record (uploadId, expireAt, part etags) is written under the configuration
 * directory (records/<sha1 of remote, bucket, key, file size and mtime>.json). A later run over the same source
 * first lists the upload's parts on the server (`GET …/<uploadId>`, pages of 1,000: a part the server stored after
 * the last record write counts too), then reads the parts already stored (to hash them) without sending them
 * again. An expired record (its uploadId's expireAt, less an hour of margin), or a 612 (unknown uploadId) from the
 * server, starts over once. The record is removed once the object is committed; records past their expireAt
 * are swept on the first use of the directory in a run.
 */
import { createHash } from 'node:crypto';
import { urlsafeB64Encode } from '../auth/base64.js';
import { BLOCK_SIZE, etagFromBlockDigests } from '../objects/etag.js';
import type { KodoClient } from './client.js';
import { describeStatus, TransferError } from './errors.js';
import type { UploadRecord } from './resume-records.js';
import { checkHash, type ByteSource, type PutAttributes, type PutResult, type UploadOptions } from './upload-types.js';

/**
 * The parts the server holds for `uploadId` (§6.5; part number → etag; only full 4 MiB parts, the size this client
 * sends, and a last shorter one), following `part-number-marker`; 'stale' when the upload is gone (612);
 * undefined when the listing failed otherwise (the record is used as it is).
 */
async function listedParts(client: KodoClient, bucket: string, base: string, uploadId: string, auth: { kind: 'uptoken'; token: string }): Promise<Record<string, string> | 'stale' | undefined> {
  const parts: Record<string, string> = {};
  let marker = 0;
  for (;;) {
    const r = await client.request(bucket, 'up', 'GET', `${base}/${uploadId}?max-parts=1000&part-number-marker=${marker}`, { auth }).catch(() => undefined);
    if (!r) return undefined;
    if (r.status === 612) return 'stale';
    if (r.status !== 200) return undefined;
    const page = JSON.parse(r.text) as { parts?: Array<{ partNumber: number; etag: string; size: number }>; partNumberMarker?: number };
    for (const p of page.parts ?? []) if (p.size > 0 && p.size <= BLOCK_SIZE) parts[String(p.partNumber)] = p.etag;
    if (!page.partNumberMarker) return parts;
    marker = page.partNumberMarker;
  }
}

/** Retries of one part on network errors and 5xx. */
const PART_ATTEMPTS = 3;

/** Reads a stream as consecutive buffers of exactly `size` bytes (the last may be shorter). */
async function* fixedChunks(stream: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let fill = 0;
  for await (const chunk of stream) {
    let off = 0;
    while (off < chunk.length) {
      const take = Math.min(size - fill, chunk.length - off);
      pending.push(chunk.subarray(off, off + take));
      fill += take;
      off += take;
      if (fill === size) {
        yield Buffer.concat(pending, size);
        pending = [];
        fill = 0;
      }
    }
  }
  if (fill > 0) yield Buffer.concat(pending, fill);
}

/** Uploads `src` (≥ 4 MiB) as a v2 multipart upload; see the module comment. */
export async function multipartUpload(
  client: KodoClient,
  bucket: string,
  key: string,
  src: ByteSource,
  attrs: PutAttributes,
  opts: UploadOptions,
  restarted = false,
): Promise<PutResult> {
  const token = client.uploadToken(bucket, key, attrs.fileType);
  const auth = { kind: 'uptoken' as const, token };
  const base = `/buckets/${encodeURIComponent(bucket)}/objects/${urlsafeB64Encode(key)}/uploads`;
  const what = `remote ${client.name}, ${bucket}:${key}`;
  const recordId = src.resumeId && opts.records ? `${client.name}\n${bucket}\n${key}\n${src.resumeId}` : undefined;

  let rec = recordId ? await opts.records!.read(recordId) : undefined;
  if (rec && rec.expireAt - 3600 < Date.now() / 1000) rec = undefined;
  if (rec) {
    const listed = await listedParts(client, bucket, base, rec.uploadId, auth);
    if (listed === 'stale') rec = undefined;
    else if (listed) rec.parts = listed;
  }
  if (!rec) {
    const init = await client.request(bucket, 'up', 'POST', base, { auth, contentType: 'application/json', body: '' });
    if (init.status !== 200) throw new TransferError(describeStatus(init.status, init.text, what), init.status);
    const { uploadId, expireAt } = JSON.parse(init.text) as { uploadId: string; expireAt: number };
    rec = { uploadId, expireAt, parts: {} };
    if (recordId) await opts.records!.write(recordId, rec);
  }
  const record = rec;
  let saving: Promise<void> = Promise.resolve();
  const save = (): Promise<void> => {
    if (!recordId) return Promise.resolve();
    const snapshot: UploadRecord = { ...record, parts: { ...record.parts } };
    saving = saving.then(() => opts.records!.write(recordId, snapshot));
    return saving;
  };

  const digests: Buffer[] = [];
  let size = 0;
  let partNumber = 0;
  let resumed = 0;
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  let stale = false;
  const limit = Math.max(1, opts.partConcurrency ?? 4);

  const sendPart = async (n: number, body: Buffer): Promise<void> => {
    const md5 = createHash('md5').update(body).digest('hex');
    for (let attempt = 1; ; attempt++) {
      await opts.limiter?.take(body.length);
      let r: { status: number; text: string };
      try {
        r = await client.request(bucket, 'up', 'PUT', `${base}/${record.uploadId}/${n}`, {
          auth,
          contentType: 'application/octet-stream',
          body,
          headers: { 'content-md5': md5 },
        });
      } catch (err) {
        if (attempt >= PART_ATTEMPTS) throw err;
        continue;
      }
      const { status, text } = r;
      if (status === 200) {
        const answer = JSON.parse(text) as { etag: string; md5?: string };
        if (answer.md5 !== undefined && answer.md5 !== md5) throw new TransferError(`${what}: part ${n} stored with a different MD5`);
        record.parts[String(n)] = answer.etag;
        await save();
        // Counted once recorded: what progress shows is what a resume would not send again.
        opts.onBytes?.(body.length);
        return;
      }
      if (status === 612) {
        stale = true;
        throw new TransferError(describeStatus(status, text, what), status);
      }
      if (status < 500 || attempt >= PART_ATTEMPTS) throw new TransferError(describeStatus(status, text, what), status);
    }
  };

  for await (const body of fixedChunks(src.open(), BLOCK_SIZE)) {
    if (failure !== undefined) break;
    partNumber += 1;
    size += body.length;
    digests.push(createHash('sha1').update(body).digest());
    if (record.parts[String(partNumber)] !== undefined) {
      resumed += body.length;
      opts.onSkipped?.(body.length);
      continue;
    }
    const p: Promise<void> = sendPart(partNumber, body).then(
      () => void inFlight.delete(p),
      (err: unknown) => {
        inFlight.delete(p);
        failure ??= err;
      },
    );
    inFlight.add(p);
    if (inFlight.size >= limit) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await saving;
  if (failure !== undefined) {
    if (stale && !restarted && recordId) {
      await opts.records!.remove(recordId);
      return multipartUpload(client, bucket, key, src, attrs, opts, true);
    }
    throw failure;
  }
  if (size !== src.size) throw new TransferError(`${what}: read ${size} bytes, expected ${src.size} (the source changed)`);

  const parts = Array.from({ length: partNumber }, (_, i) => ({ partNumber: i + 1, etag: record.parts[String(i + 1)]! }));
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs.meta ?? {})) metadata[`x-qn-meta-${k}`] = v;
  const body = JSON.stringify({ parts, fname: src.name, ...(attrs.mimeType ? { mimeType: attrs.mimeType } : {}), metadata, customVars: {} });
  const done = await client.request(bucket, 'up', 'POST', `${base}/${record.uploadId}`, { auth, contentType: 'application/json', body });
  if (done.status === 612 && !restarted && recordId) {
    await opts.records!.remove(recordId);
    return multipartUpload(client, bucket, key, src, attrs, opts, true);
  }
  if (done.status !== 200) throw new TransferError(describeStatus(done.status, done.text, what), done.status);
  if (recordId) await opts.records!.remove(recordId);
  const answer = JSON.parse(done.text) as { hash?: string };
  return { ...checkHash(client, bucket, key, answer.hash, etagFromBlockDigests(digests), size), ...(resumed > 0 ? { resumedBytes: resumed } : {}) };
}
