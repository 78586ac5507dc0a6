/**
 * A frozen object store: radosgw SIGSTOPped (test/helpers/s3-server.ts `freeze`), so it accepts TCP connections and
 * answers nothing, the way a hung radosgw or a full OSD behaves. With GRANARY_S3_TIMEOUT=2: an upload of a blob
 * (larger than the inline limit) and a download of an S3 blob answer 599 `the object store (S3) failed or did not
 * answer`, /health/ready answers 503 saying which uploads are refused while an inline upload still succeeds, and
 * after SIGCONT the same server serves uploads and downloads again without a restart. With a store timeout of
 * 600 s, ready still answers 503 within its own deadline (3 s). A stop with a request stuck
 * on the frozen store (GRANARY_S3_TIMEOUT long, GRANARY_STOP_TIMEOUT=1) ends: the request's store call is aborted,
 * it answers 599, and the stop logs it. Every request carries a signal aborting it after BOUND_MS, so a hang
 * fails the test instead of stalling it.
 */
import { once } from 'node:events';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededBytes } from '../helpers/files.js';
import { upToken } from '../helpers/resumable.js';
import { startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectError, multipart, readAnswer, uploadParts, type RawAnswer } from '../helpers/upload.js';

const BUCKET = 'frozen';
/** GRANARY_S3_TIMEOUT of the first server, seconds. */
const S3_TIMEOUT = 2;
/** Every answer must come within this (the bound plus room for a loaded machine), ms. */
const BOUND_MS = 5 * S3_TIMEOUT * 1000;
const STORE_FAILED = /^the object store \(S3\) failed or did not answer/;
/** Larger than the inline limit (64 KiB): stored as an S3 blob. */
const BLOB_BYTES = 300_000;

let s3: S3TestServer;
let s: TestServer;
let bucket: string;

/** Form upload of `content` under `key`, aborted after BOUND_MS. */
async function formUpload(base: string, key: string, content: Buffer): Promise<RawAnswer> {
  const { body, contentType } = multipart(uploadParts(upToken({ scope: `${BUCKET}:${key}` }), key, content));
  const res = await fetch(`${base}/`, { method: 'POST', headers: { 'content-type': contentType }, body, signal: AbortSignal.timeout(BOUND_MS) });
  return readAnswer(res);
}

/** A download of `key`, aborted after BOUND_MS. */
async function download(key: string): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(`${s.url}/${BUCKET}/${key}`, { signal: AbortSignal.timeout(BOUND_MS) });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

/** A download expected to fail: its answer as `expectError` takes it. */
async function failedDownload(key: string): Promise<RawAnswer> {
  return readAnswer(await fetch(`${s.url}/${BUCKET}/${key}`, { signal: AbortSignal.timeout(BOUND_MS) }));
}

async function ready(): Promise<{ status: number; body: { status: string; reasons?: string[] } }> {
  const res = await fetch(`${s.url}/health/ready`, { signal: AbortSignal.timeout(BOUND_MS) });
  return { status: res.status, body: (await res.json()) as { status: string; reasons?: string[] } };
}

beforeAll(async () => {
  s3 = await startS3Server();
  bucket = await s3.createBucket();
  s = await startTestServer({ ...s3.granaryEnv(bucket, 'a/'), GRANARY_S3_TIMEOUT: String(S3_TIMEOUT), GRANARY_S3_CONNECT_TIMEOUT: '2' });
  await createBucket(s, BUCKET);
}, 120_000);
afterAll(async () => {
  s3?.thaw();
  await s?.stop();
  await s3?.stop();
});

describe('a frozen object store (radosgw SIGSTOPped)', () => {
  it('answers 599 to a blob upload and to a download, 503 on ready, keeps inline uploads, and recovers after SIGCONT', async () => {
    const kept = seededBytes('kept', BLOB_BYTES);
    expect((await formUpload(s.url, 'kept.bin', kept)).status).toBe(200);

    s3.freeze();
    try {
      expectError(await formUpload(s.url, 'new.bin', seededBytes('new', BLOB_BYTES)), 599, STORE_FAILED);
      expectError(await failedDownload('kept.bin'), 599, STORE_FAILED);
      const r = await ready();
      expect(r.status).toBe(503);
      expect(r.body.reasons?.join('\n')).toMatch(
        /^object store: the object store \(S3\) failed or did not answer: .*: uploads larger than the inline limit \(64\.0 KiB, GRANARY_INLINE_MAX\) are refused$/m,
      );
      // What ready says is true: a small object goes to the database, not to the store.
      expect((await formUpload(s.url, 'small.txt', Buffer.from('inline while frozen'))).status).toBe(200);
    } finally {
      s3.thaw();
    }

    // The same server, no restart: writes and reads reach the store again.
    const after = seededBytes('after', BLOB_BYTES);
    expect((await formUpload(s.url, 'after.bin', after)).status).toBe(200);
    const got = await download('after.bin');
    expect(got.status).toBe(200);
    expect(got.body.equals(after)).toBe(true);
    expect((await download('kept.bin')).body.equals(kept)).toBe(true);
    expect((await ready()).status).toBe(200);
  }, 120_000);

  it('a stop ends within GRANARY_STOP_TIMEOUT with a request stuck on the store: aborted, answered 599, logged', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = { write: (text: string): void => void lines.push(JSON.parse(text) as { level: number; msg: string }) };
    // A store timeout far beyond the stop's: only the stop's abort can end the stuck request.
    const env = { ...s3.granaryEnv(bucket, 'b/'), GRANARY_S3_TIMEOUT: '600', GRANARY_STOP_TIMEOUT: '1', GRANARY_CONSOLE_PORT: '0' };
    const b = await startTestServer(env, pino({ level: 'info' }, sink));
    try {
      await createBucket(b, BUCKET);
      s3.freeze();
      // Ready has its own deadline, far below this server's store timeout.
      const r = await fetch(`${b.url}/health/ready`, { signal: AbortSignal.timeout(BOUND_MS) });
      expect(r.status).toBe(503);
      expect(((await r.json()) as { reasons: string[] }).reasons.join('\n')).toMatch(
        /^object store: the object store \(S3\) failed or did not answer: writing a probe blob \(no answer within 3 s\): uploads larger/m,
      );
      const arrived = once(b.running.app.server, 'request');
      const answer = formUpload(b.url, 'stuck.bin', seededBytes('stuck', BLOB_BYTES));
      await arrived;
      await b.running.close();
      expectError(await answer, 599, STORE_FAILED);
      expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toContain(
        'stop: calls to the blob store still running after GRANARY_STOP_TIMEOUT were aborted',
      );
    } finally {
      s3.thaw();
      await b.stop();
    }
  }, 120_000);
});
