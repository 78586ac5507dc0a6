/**
 * A raw client for resumable uploads (docs/development/kodo-protocol.md §5 v1 mkblk/bput/mkfile, §6 v2 multipart), for requests the SDK
 * cannot be made to send: replayed, altered or foreign ctxs, partial uploads, bad part lists. Every call answers
 * a RawAnswer (status, headers, text, JSON). `token` undefined sends no Authorization header at all.
 */
import { createHash } from 'node:crypto';
import qiniu from 'qiniu';
import { expect } from 'vitest';
import { AK, SK } from './server.js';
import { readAnswer, type RawAnswer } from './upload.js';

const b64 = (text: string): string => qiniu.util.urlsafeBase64Encode(text);

/** An upload token signed with `mac` (default: the root test pair). */
export function upToken(policy: Record<string, unknown>, mac = new qiniu.auth.digest.Mac(AK, SK)): string {
  return new qiniu.rs.PutPolicy(policy as unknown as qiniu.rs.PutPolicyOptions).uploadToken(mac);
}

/** The mkblk/bput answer (§5.2). */
export interface BlockJson {
  ctx: string;
  checksum: string;
  crc32: number;
  offset: number;
  host: string;
  expired_at: number;
}

/** A v2 part answer (§6.2). */
export interface PartJson {
  etag: string;
  md5: string;
}

/** The list-parts answer (§6.5). */
export interface PartsJson {
  uploadId: string;
  expireAt: number;
  partNumberMarker: number;
  parts: Array<{ partNumber: number; etag: string; size: number; putTime: number }>;
}

/** Hex MD5 (the form of `Content-MD5` both SDKs send). */
export const md5Hex = (data: Buffer): string => createHash('md5').update(data).digest('hex');

/** Asserts a 200 answer and returns its JSON. */
export function ok<T>(a: RawAnswer): T {
  expect(a.status, a.text).toBe(200);
  return a.json as T;
}

export class RawUp {
  constructor(
    readonly base: string,
    readonly token: string | undefined,
  ) {}

  /** The same client with another token. */
  as(token: string | undefined): RawUp {
    return new RawUp(this.base, token);
  }

  private async call(method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<RawAnswer> {
    const h: Record<string, string> = { ...headers };
    if (this.token !== undefined) h.authorization = `UpToken ${this.token}`;
    return readAnswer(await fetch(`${this.base}${path}`, { method, headers: h, ...(body !== undefined ? { body } : {}) }));
  }

  // ---- v1 ----

  /** `POST /mkblk/<blockSize>` with the first chunk. */
  mkblk(blockSize: number, chunk: Buffer): Promise<RawAnswer> {
    return this.call('POST', `/mkblk/${blockSize}`, chunk, { 'content-type': 'application/octet-stream' });
  }

  /** `POST /bput/<ctx>/<offset>` with the next chunk. */
  bput(ctx: string, offset: number, chunk: Buffer): Promise<RawAnswer> {
    return this.call('POST', `/bput/${ctx}/${offset}`, chunk, { 'content-type': 'application/octet-stream' });
  }

  /** `POST /mkfile/<size>/<name>/<b64 value>…` with the ctxs joined by commas. */
  mkfile(size: number, ctxs: string[], params: Record<string, string> = {}): Promise<RawAnswer> {
    let path = `/mkfile/${size}`;
    for (const [name, value] of Object.entries(params)) path += `/${name}/${b64(value)}`;
    return this.call('POST', path, ctxs.join(','), { 'content-type': 'text/plain' });
  }

  /** Uploads `content` as one block: mkblk with the first `chunkSize` bytes, then bput for the rest; the last ctx. */
  async block(content: Buffer, chunkSize = content.length): Promise<string> {
    let ans = ok<BlockJson>(await this.mkblk(content.length, content.subarray(0, chunkSize)));
    while (ans.offset < content.length) {
      ans = ok<BlockJson>(await this.bput(ans.ctx, ans.offset, content.subarray(ans.offset, ans.offset + chunkSize)));
    }
    return ans.ctx;
  }

  // ---- v2 ----

  /** `/buckets/<bucket>/objects/<b64 key | ~>/uploads`. */
  uploadsPath(bucket: string, key: string | undefined): string {
    return `/buckets/${bucket}/objects/${key === undefined ? '~' : b64(key)}/uploads`;
  }

  /** Initiate (§6.1). */
  init(bucket: string, key: string | undefined): Promise<RawAnswer> {
    return this.call('POST', this.uploadsPath(bucket, key), '', { 'content-type': 'application/json' });
  }

  /**
   * Upload part (§6.2); `md5` true sends the right hex Content-MD5, a string sends that, false none. `n` may be any
   * text for the path (to send malformed part numbers).
   */
  part(bucket: string, key: string | undefined, id: string, n: number | string, data: Buffer, md5: boolean | string = true): Promise<RawAnswer> {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (md5 !== false) headers['content-md5'] = md5 === true ? md5Hex(data) : md5;
    return this.call('PUT', `${this.uploadsPath(bucket, key)}/${id}/${n}`, data, headers);
  }

  /** Complete (§6.3) with a JSON body (an object is serialised). */
  complete(bucket: string, key: string | undefined, id: string, body: object | string): Promise<RawAnswer> {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return this.call('POST', `${this.uploadsPath(bucket, key)}/${id}`, text, { 'content-type': 'application/json' });
  }

  /** List parts (§6.5) with an optional query (`max-parts=…&part-number-marker=…`). */
  list(bucket: string, key: string | undefined, id: string, query = ''): Promise<RawAnswer> {
    return this.call('GET', `${this.uploadsPath(bucket, key)}/${id}${query ? `?${query}` : ''}`);
  }

  /** Abort (§6.4). */
  abort(bucket: string, key: string | undefined, id: string): Promise<RawAnswer> {
    return this.call('DELETE', `${this.uploadsPath(bucket, key)}/${id}`);
  }
}
