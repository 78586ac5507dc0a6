/**
 * Encryption at rest (docs/reference/encryption.md, store/crypto/): with GRANARY_MASTER_KEY_FILE every new blob —
 * inline, file, multipart part — is stored encrypted and read back whole and by ranges crossing 64 KiB chunks;
 * objects stored before encryption was turned on stay readable; no plaintext of a known marker lies anywhere under
 * the data dir; a flipped ciphertext bit answers 599 (marked corrupt), never the bytes; a start with a missing or
 * wrong master key is refused naming the file.
 */
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flipStoredByte } from '../helpers/bitrot.js';
import { runCli } from '../helpers/cli.js';
import { put } from '../helpers/rs.js';
import { s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const BUCKET = 'sealed';
/** A marker no ciphertext contains by chance; repeated through every object's content. */
const MARKER = Buffer.from('PLAINTEXT-MARKER-7f3a9c');
/** The content of objects stored in the clear before encryption was turned on. */
const OLD = Buffer.from('stored-before-encryption');

/** `size` bytes of the marker repeated, with a position stamp every 4 KiB so ranges are checked exactly. */
function content(size: number, marker = MARKER): Buffer {
  const b = Buffer.alloc(size);
  for (let at = 0; at < size; at += marker.length) marker.copy(b, at);
  for (let at = 0; at + 8 <= size; at += 4 * KiB) b.writeDoubleBE(at, at);
  return b;
}

let dir: string;
let keyFile: string;
let s: TestServer | undefined;
let s3: S3Client;

async function start(env: Record<string, string> = { GRANARY_MASTER_KEY_FILE: keyFile }): Promise<TestServer> {
  s = await startTestServer({ GRANARY_DATA_DIR: dir, GRANARY_INLINE_MAX: String(16 * KiB), ...env });
  s3 = s3Client(s.s3Url!, AK, SK);
  return s;
}

async function stop(): Promise<void> {
  await s?.stop();
  s = undefined;
}

async function get(key: string, range?: string): Promise<{ status: number; body: Buffer }> {
  const r = await fetch(`${s!.url}/${BUCKET}/${encodeURIComponent(key)}`, { headers: range ? { range } : {} });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

async function s3Get(key: string, range?: string): Promise<Buffer> {
  const r = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...(range ? { Range: range } : {}) }));
  return Buffer.from(await r.Body!.transformToByteArray());
}

/** Every file under `root` (data dir: meta.db and its WAL, blobs, tmp). */
async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

const SIZES = { tiny: 100, inlineEdge: 16 * KiB, chunkEdge: 64 * KiB, file: 300 * KiB + 17, large: 3 * MiB + 5 } as const;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-enc-'));
  keyFile = join(dir, '..', `${dir.split('/').pop()}-master.key`);
  await writeFile(keyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  // Before encryption: an object stored in the clear (inline and file) must stay readable afterwards.
  await start({});
  await createBucket(s!, BUCKET);
  await put(s!, BUCKET, 'old-small', content(200, OLD));
  await put(s!, BUCKET, 'old-file', content(100 * KiB, OLD));
  await stop();
  await start();
});

afterAll(async () => {
  await stop();
  await rm(dir, { recursive: true, force: true });
  await rm(keyFile, { force: true });
});

describe('encryption at rest', () => {
  it('reads objects stored before encryption was turned on', async () => {
    expect((await get('old-small')).body.equals(content(200, OLD))).toBe(true);
    expect((await get('old-file')).body.equals(content(100 * KiB, OLD))).toBe(true);
    expect((await get('old-file', 'bytes=70000-70100')).body.equals(content(100 * KiB, OLD).subarray(70000, 70101))).toBe(true);
  });

  it('round-trips objects of every size through S3 and Kodo, whole and by ranges across chunks', async () => {
    for (const [name, size] of Object.entries(SIZES)) {
      const body = content(size);
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `s3-${name}`, Body: body }));
      await put(s!, BUCKET, `kodo-${name}`, body);
      for (const key of [`s3-${name}`, `kodo-${name}`]) {
        expect((await s3Get(key)).equals(body), key).toBe(true);
        const whole = await get(key);
        expect(whole.status).toBe(200);
        expect(whole.body.equals(body), key).toBe(true);
        for (const [a, b] of [[0, 0], [size - 1, size - 1], [Math.max(0, 64 * KiB - 10), Math.min(size - 1, 64 * KiB + 10)], [Math.floor(size / 3), size - 1]] as const) {
          if (a > b) continue;
          expect((await s3Get(key, `bytes=${a}-${b}`)).equals(body.subarray(a, b + 1)), `${key} ${a}-${b}`).toBe(true);
        }
      }
    }
  });

  it('round-trips a multipart upload with ranges across parts', async () => {
    const body = content(11 * MiB + 3);
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'multi' }));
    const parts = [];
    for (let i = 0, n = 1; i < body.length; i += 5 * MiB, n++) {
      const r = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'multi', UploadId, PartNumber: n, Body: body.subarray(i, i + 5 * MiB) }));
      parts.push({ ETag: r.ETag!, PartNumber: n });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: 'multi', UploadId, MultipartUpload: { Parts: parts } }));
    expect((await s3Get('multi')).equals(body)).toBe(true);
    const a = 5 * MiB - 100;
    const b = 10 * MiB + 100;
    expect((await s3Get('multi', `bytes=${a}-${b}`)).equals(body.subarray(a, b + 1))).toBe(true);
  });

  it('keeps fop results encrypted in the result cache: served decrypted on a hit, small and large', async () => {
    for (const [key, lines] of [['doc-small.md', 20], ['doc-large.md', 8000]] as const) {
      const md = Array.from({ length: lines }, (_, i) => `line ${i} ${MARKER.toString()}\n`).join('\n');
      await put(s!, BUCKET, key, Buffer.from(md));
      const first = await fetch(`${s!.url}/${BUCKET}/${key}?md2html/1`);
      const html = await first.text();
      expect(first.status, html).toBe(200);
      expect(first.headers.get('x-granary-cache')).toBe('miss');
      expect(html).toContain(`line ${lines - 1} ${MARKER.toString()}`);
      const again = await fetch(`${s!.url}/${BUCKET}/${key}?md2html/1`);
      expect(again.headers.get('x-granary-cache')).toBe('hit');
      expect(await again.text()).toBe(html);
    }
    expect((await filesUnder(join(dir, 'fop-cache'))).length).toBeGreaterThanOrEqual(3);
  });

  it('leaves no plaintext of the marker anywhere under the data dir', async () => {
    await stop(); // checkpoints the WAL into meta.db
    const files = await filesUnder(dir);
    expect(files.filter((f) => /blobs\/..\/..\//.test(f)).length).toBeGreaterThan(5);
    const found: string[] = [];
    for (const file of files) {
      if ((await readFile(file)).includes(MARKER)) found.push(file);
    }
    expect(found).toEqual([]);
    // The objects stored in the clear before are still there, in the clear: the check would see plaintext.
    expect((await Promise.all(files.map((f) => readFile(f)))).some((b) => b.includes(OLD))).toBe(true);
    // `granary stat` (offline) tells encrypted entries from those stored before, inline and file alike.
    const env = { GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_MASTER_KEY_FILE: keyFile };
    for (const [key, atRest] of [['kodo-tiny', true], ['kodo-large', true], ['old-small', false], ['old-file', false]] as const) {
      const r = runCli(['stat', '--data-dir', dir, `${BUCKET}:${key}`], env);
      expect(r.status, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as { encryption: unknown }).encryption, key).toEqual({ atRest });
    }
    await start();
    expect((await get('kodo-tiny')).body.equals(content(SIZES.tiny))).toBe(true);
  });

  it('rotates the master key: headers re-wrapped, every object still readable, the old key refused after', async () => {
    await stop();
    const newKey = `${keyFile}.new`;
    await writeFile(newKey, randomBytes(32).toString('hex'));
    const blobBytes = async (): Promise<Buffer[]> =>
      Promise.all((await filesUnder(join(dir, 'blobs'))).filter((f) => /[0-9a-f]{32}$/.test(f)).sort().map((f) => readFile(f)));
    const before = await blobBytes();
    const r = runCli(['keys', 'rotate-master', '--data-dir', dir, '--old-key-file', keyFile, '--new-key-file', newKey], { GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/re-wrapped [1-9]\d* blob files and [1-9]\d* inline blobs/);
    // Only headers changed: every blob keeps its size and its bytes past the header.
    const after = await blobBytes();
    expect(after.map((b) => b.length)).toEqual(before.map((b) => b.length));
    expect(after.every((b, i) => b.subarray(120).equals(before[i]!.subarray(120)))).toBe(true);
    await expect(start()).rejects.toThrow(/is not the key this deployment's objects are encrypted with/);
    await rm(keyFile);
    await writeFile(keyFile, await readFile(newKey));
    await rm(newKey);
    await start();
    for (const [name, size] of Object.entries(SIZES)) {
      expect((await get(`s3-${name}`)).body.equals(content(size)), name).toBe(true);
      expect((await get(`kodo-${name}`)).body.equals(content(size)), name).toBe(true);
    }
    expect((await s3Get('multi', 'bytes=5242000-5243000')).equals(content(11 * MiB + 3).subarray(5242000, 5243001))).toBe(true);
    expect((await get('old-file')).body.equals(content(100 * KiB, OLD))).toBe(true);
  });

  it('answers 599 for a flipped ciphertext bit, never the bytes, and marks the object corrupt', async () => {
    for (const key of ['s3-tiny', 's3-file', 's3-large']) {
      // A byte in the middle of the stored bytes (past the header): ciphertext.
      await flipStoredByte(s!, BUCKET, key, 150);
      const r = await get(key);
      expect(r.status, key).toBe(599);
      expect(r.body.includes(MARKER)).toBe(false);
      const rec = await s!.running.g.meta.getObject(BUCKET, key);
      await expect.poll(async () => (await s!.running.g.meta.getObject(BUCKET, key))?.corrupt ?? rec?.corrupt).toBe(true);
    }
  });

  it('refuses to start without the master key, or with another one, naming the file', async () => {
    await stop();
    await expect(start({})).rejects.toThrow(/GRANARY_MASTER_KEY_FILE is not set/);
    const wrong = `${keyFile}.wrong`;
    await writeFile(wrong, randomBytes(32).toString('base64'));
    try {
      await expect(start({ GRANARY_MASTER_KEY_FILE: wrong })).rejects.toThrow(new RegExp(`master key in ${wrong.replace(/[.]/g, '\\.')}.*is not the key`));
      await writeFile(wrong, 'not a key');
      await expect(start({ GRANARY_MASTER_KEY_FILE: wrong })).rejects.toThrow(/must hold 32 bytes/);
    } finally {
      await rm(wrong, { force: true });
    }
    await start();
    expect((await get('s3-chunkEdge')).body.equals(content(SIZES.chunkEdge))).toBe(true);
  });

  it('takes the master key from GRANARY_MASTER_KEY (hex or base64), checked as the file; both set is refused', async () => {
    await stop();
    const key = Buffer.from((await readFile(keyFile, 'utf8')).trim(), 'hex');
    await expect(start({ GRANARY_MASTER_KEY: key.toString('hex'), GRANARY_MASTER_KEY_FILE: keyFile })).rejects.toThrow(/both GRANARY_MASTER_KEY_FILE and GRANARY_MASTER_KEY are set/);
    await expect(start({ GRANARY_MASTER_KEY: 'not a key' })).rejects.toThrow(/GRANARY_MASTER_KEY must hold 32 bytes/);
    await expect(start({ GRANARY_MASTER_KEY: randomBytes(32).toString('hex') })).rejects.toThrow(/master key in GRANARY_MASTER_KEY .*is not the key/);
    for (const text of [key.toString('hex'), key.toString('base64')]) {
      await start({ GRANARY_MASTER_KEY: text });
      expect((await get('s3-chunkEdge')).body.equals(content(SIZES.chunkEdge))).toBe(true);
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'via-env', Body: content(1000) }));
      expect((await s3Get('via-env')).equals(content(1000))).toBe(true);
      await stop();
    }
    await start();
    expect((await get('via-env')).body.equals(content(1000))).toBe(true);
  });
});
