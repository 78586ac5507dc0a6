/**
 * Helpers for the rs (object management) e2e tests: uploads with a chosen put policy and metadata, raw signed op
 * requests (the response text kept, for exact `putTime` checks), and a count of the stored blobs.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import qiniu from 'qiniu';
import { expect } from 'vitest';
import { signedFetch } from './http.js';
import { sdk, type TestServer } from './server.js';
import { readAnswer, type RawAnswer } from './upload.js';

/** EncodedEntryURI of `<bucket>:<key>` (the SDK's own encoder). */
export const entry = (bucket: string, key: string): string => qiniu.util.encodedEntry(bucket, key);

/** URL-safe base64 of a text (the SDK's own encoder). */
export const b64 = (text: string): string => qiniu.util.urlsafeBase64Encode(text);

/** Form-uploads `body` as `<bucket>:<key>` with extra policy fields, a MIME type and `x-qn-meta-*` metadata. */
export async function put(
  s: TestServer,
  bucket: string,
  key: string,
  body: Buffer | string,
  opts: { policy?: Record<string, unknown>; mimeType?: string; meta?: Record<string, string> } = {},
): Promise<{ key: string; hash: string }> {
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.meta ?? {})) metadata[`x-qn-meta-${k}`] = v;
  const extra = new qiniu.form_up.PutExtra(undefined, undefined, opts.mimeType, undefined, undefined, metadata);
  const token = s.uploadToken({ scope: `${bucket}:${key}`, ...opts.policy });
  const r = await sdk<{ key: string; hash: string }>(up.put(token, key, Buffer.from(body), extra));
  expect(r.status, JSON.stringify(r.data)).toBe(200);
  return r.data;
}

/** A raw answer: status, headers, text and parsed JSON (undefined when the text is not JSON). */
export type OpAnswer = RawAnswer;

/** Sends a signed management request (`Qiniu` by default) for an op path such as `/stat/<entry>`. */
export async function rawOp(
  s: TestServer,
  path: string,
  opts: { method?: string; body?: string; scheme?: 'Qiniu' | 'QBox'; mac?: qiniu.auth.digest.Mac; contentType?: string } = {},
): Promise<OpAnswer> {
  return readAnswer(await signedFetch(s, { ...opts, path, method: opts.method ?? 'POST' }));
}

/** Asserts a JSON error answer `{"error": "..."}` with `status`. */
export function expectJsonError(a: OpAnswer, status: number): void {
  expect(a.status, a.text).toBe(status);
  expect(a.headers.get('content-type')).toMatch(/^application\/json/);
  expect(a.json).toEqual({ error: expect.any(String) });
}

/** A blob file's name (32 hex characters): not the deployment marker `blobs/deployment.json`. */
const BLOB_FILE = /^[0-9a-f]{32}$/;

/**
 * Number of stored blobs: sealed blob files under `<dataDir>/blobs` (recursive; directories not counted) plus the
 * inline blobs kept in the metadata database (small objects, store/inline-blob-store.ts).
 */
export async function countBlobs(s: TestServer): Promise<number> {
  const entries = await readdir(join(s.dataDir, 'blobs'), { recursive: true, withFileTypes: true });
  const db = new Database(join(s.dataDir, 'meta.db'), { readonly: true });
  try {
    const inline = db.prepare('SELECT COUNT(*) AS n FROM inline_blobs').get() as { n: number };
    return entries.filter((e) => e.isFile() && BLOB_FILE.test(e.name)).length + inline.n;
  } finally {
    db.close();
  }
}
