/**
 * Helpers for upload tests: buckets, downloads, raw multipart bodies (for requests the SDK cannot produce) and a
 * look into the server's staging directory.
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { readdir } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { sdk, type TestServer } from './server.js';

/** Creates `bucket` (region z0) through the SDK and checks it worked. */
export async function createBucket(s: TestServer, bucket: string): Promise<void> {
  const r = await sdk(s.bucketManager().createBucket(bucket, { regionId: 'z0' }));
  expect(r.status).toBe(200);
}

/** A downloaded object: status, body bytes and headers. */
export interface Downloaded {
  status: number;
  body: Buffer;
  headers: Headers;
}

/** `GET <server>/<bucket>/<key>` (path style; the key is percent-encoded). */
export async function download(s: TestServer, bucket: string, key: string): Promise<Downloaded> {
  const res = await fetch(`${s.url}/${encodeURIComponent(bucket)}/${encodeURIComponent(key)}`);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** Asserts that `<bucket>/<key>` downloads with exactly `content`. */
export async function expectStored(s: TestServer, bucket: string, key: string, content: Buffer): Promise<Downloaded> {
  const d = await download(s, bucket, key);
  expect(d.status).toBe(200);
  expect(d.body.equals(content), `bytes of ${bucket}/${key} differ`).toBe(true);
  return d;
}

/** Asserts that `<bucket>/<key>` is absent (404). */
export async function expectAbsent(s: TestServer, bucket: string, key: string): Promise<void> {
  expect((await download(s, bucket, key)).status).toBe(404);
}

/** One part of a multipart body: a text field, or a file part when `filename` or `contentType` is given. */
export interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  contentType?: string;
}

/** A `multipart/form-data` body built by hand (field order exactly as given). */
export function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----granary-test-${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType !== undefined) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The parts of a normal form upload: token, optional key, extra fields, the file. */
export function uploadParts(token: string, key: string | undefined, content: Buffer, extra: Record<string, string> = {}): Part[] {
  const parts: Part[] = [{ name: 'token', value: token }];
  if (key !== undefined) parts.push({ name: 'key', value: key });
  for (const [name, value] of Object.entries(extra)) parts.push({ name, value });
  parts.push({ name: 'file', value: content, filename: 'upload.bin', contentType: 'application/octet-stream' });
  return parts;
}

/** An HTTP answer read whole: status, headers, text and (when it parses) JSON. */
export interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** `POST /` with the given body and content type (none when `contentType` is undefined). */
export async function postRoot(s: TestServer, body: Buffer | string, contentType: string | undefined): Promise<RawAnswer> {
  const headers: Record<string, string> = {};
  if (contentType !== undefined) headers['content-type'] = contentType;
  return readAnswer(await fetch(`${s.url}/`, { method: 'POST', headers, body }));
}

/** Status, headers, body text and (when it parses) JSON of a fetch response. */
export async function readAnswer(res: Response): Promise<RawAnswer> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** `POST /` with a hand-built multipart body. */
export async function postMultipart(s: TestServer, parts: Part[]): Promise<RawAnswer> {
  const { body, contentType } = multipart(parts);
  return postRoot(s, body, contentType);
}

/** Asserts an error answer: the status, a JSON content type and a body `{"error": <string matching msg>}`. */
export function expectError(a: RawAnswer, status: number, msg?: RegExp): void {
  expect(a.status, a.text).toBe(status);
  expect(a.headers.get('content-type')).toMatch(/^application\/json/);
  expect(a.json).toEqual({ error: expect.any(String) });
  if (msg) expect((a.json as { error: string }).error).toMatch(msg);
}

/** Names of the files in the server's staging directory `<dataDir>/tmp`. */
export async function stagingFiles(s: TestServer): Promise<string[]> {
  return readdir(join(s.dataDir, 'tmp'));
}

/** Directory of the real photos used as test content (override with GRANARY_FIXTURES). */
export const FIXTURE_IMAGES = process.env.GRANARY_FIXTURES ?? '/work/shared/fixtures/images';

/** Records `METHOD url` of every request the server receives from now on; call the result to stop. */
export function recordRequests(s: TestServer): { seen: string[]; stop: () => void } {
  const seen: string[] = [];
  const listener = (req: { method?: string; url?: string }): void => {
    seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
  };
  s.running.app.server.on('request', listener);
  return { seen, stop: () => s.running.app.server.off('request', listener) };
}

/**
 * Polls `cond` every 10 ms until it holds, failing after `timeoutMs`. Only for effects no event announces (e.g.
 * the server deleting a staging file after a client vanished).
 */
export async function waitUntil(cond: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await delay(10);
  }
}

/** A form upload sent by hand in two halves, so a test can act (or vanish) in between. */
export interface SplitUpload {
  /** Sends the second half and ends the request; resolves with the answer. */
  finish(): Promise<{ status: number; text: string }>;
  /** Drops the connection; resolves once the socket is closed. */
  destroy(): Promise<void>;
  /** Whether any response arrived so far. */
  answered(): boolean;
}

/**
 * Starts `POST /` with `parts` over node:http (`content-length` or `chunked` framing), sends the first half of the
 * body and resolves once the server has begun staging the file (a file appeared in `<dataDir>/tmp`).
 */
export async function startSplitUpload(s: TestServer, parts: Part[], framing: 'content-length' | 'chunked'): Promise<SplitUpload> {
  const { body, contentType } = multipart(parts);
  const headers: Record<string, string | number> = { 'content-type': contentType };
  if (framing === 'content-length') headers['content-length'] = body.length;
  const req = http.request({ host: '127.0.0.1', port: s.running.port, method: 'POST', path: '/', headers });
  let answered = false;
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  answer.catch(() => undefined); // a destroyed request rejects; only finish() awaits it
  const closed = new Promise<void>((resolve) => req.on('close', resolve));
  const half = Math.floor(body.length / 2);
  req.write(body.subarray(0, half));
  await waitUntil(async () => (await stagingFiles(s)).length > 0, 'the server stages the incoming file');
  return {
    finish: () => {
      req.end(body.subarray(half));
      return answer;
    },
    destroy: async () => {
      req.destroy();
      await closed;
    },
    answered: () => answered,
  };
}
