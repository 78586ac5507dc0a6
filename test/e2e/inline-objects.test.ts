/**
 * Small objects inline (store/inline-blob-store.ts): objects up to GRANARY_INLINE_MAX bytes are kept in
 * the metadata database with their entry — no blob file — and behave like any other object across download,
 * Range, copy, move, delete, fops and their cache, and a restart; larger ones are files; a data dir written with
 * inline storage off keeps working with it on.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededBytes } from '../helpers/files.js';
import { entry, put, rawOp } from '../helpers/rs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectStored } from '../helpers/upload.js';
import { isInlineBlobId } from '../../src/ports/inline-blob-id.js';

const KiB = 1024;
const BUCKET = 'inline';
const INLINE_MAX = 16 * KiB;

/** Blob files on disk (inline blobs are not files). */
async function countBlobFiles(dir: string): Promise<number> {
  const { readdir } = await import('node:fs/promises');
  const entries = await readdir(join(dir, 'blobs'), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && /^[0-9a-f]{32}$/.test(e.name)).length;
}

async function blobIdOf(s: TestServer, key: string): Promise<string> {
  const rec = await s.running.g.meta.getObject(BUCKET, key);
  if (!rec) throw new Error(`no entry ${key}`);
  return rec.blobId;
}

async function range(s: TestServer, key: string, spec: string): Promise<{ status: number; body: Buffer; contentRange: string | null }> {
  const res = await fetch(`${s.url}/${BUCKET}/${key}`, { headers: { range: spec } });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), contentRange: res.headers.get('content-range') };
}

describe('small objects inline', () => {
  let dataDir = '';
  let s: TestServer;
  const small = seededBytes('inline-small', 4 * KiB);
  const edge = seededBytes('inline-edge', INLINE_MAX);
  const over = seededBytes('inline-over', INLINE_MAX + 1);

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-inline-'));
    s = await startTestServer({ GRANARY_DATA_DIR: dataDir, GRANARY_INLINE_MAX: String(INLINE_MAX) });
    await createBucket(s, BUCKET);
  });
  afterAll(async () => {
    await s?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps objects up to the limit in the database (no file) and larger ones as files', async () => {
    const files = await countBlobFiles(dataDir);
    await put(s, BUCKET, 'small', small);
    await put(s, BUCKET, 'edge', edge);
    await put(s, BUCKET, 'empty', Buffer.alloc(0));
    expect(await countBlobFiles(dataDir)).toBe(files);
    for (const key of ['small', 'edge', 'empty']) expect(isInlineBlobId(await blobIdOf(s, key))).toBe(true);
    await put(s, BUCKET, 'over', over);
    expect(await countBlobFiles(dataDir)).toBe(files + 1);
    expect(isInlineBlobId(await blobIdOf(s, 'over'))).toBe(false);
    await expectStored(s, BUCKET, 'small', small);
    await expectStored(s, BUCKET, 'edge', edge);
    await expectStored(s, BUCKET, 'empty', Buffer.alloc(0));
    await expectStored(s, BUCKET, 'over', over);
  });

  it('serves ranges of an inline object', async () => {
    const mid = await range(s, 'small', 'bytes=100-199');
    expect(mid.status).toBe(206);
    expect(mid.contentRange).toBe(`bytes 100-199/${small.length}`);
    expect(mid.body.equals(small.subarray(100, 200))).toBe(true);
    const suffix = await range(s, 'small', 'bytes=-10');
    expect(suffix.body.equals(small.subarray(small.length - 10))).toBe(true);
    const open = await range(s, 'edge', `bytes=${INLINE_MAX - 5}-`);
    expect(open.body.equals(edge.subarray(INLINE_MAX - 5))).toBe(true);
  });

  it('verifies the inline bytes read with the entry: flipped in the database, GET and Range answer 599, stat shows corrupt', async () => {
    const bytes = seededBytes('inline-rot', 8 * KiB);
    await put(s, BUCKET, 'rot', bytes);
    await expectStored(s, BUCKET, 'rot', bytes);
    const db = new Database(join(dataDir, 'meta.db'));
    try {
      const flipped = Buffer.from(bytes);
      flipped[5000] = (flipped[5000] ?? 0) ^ 0xff;
      db.prepare('UPDATE inline_blobs SET data = ? WHERE id = ?').run(flipped, await blobIdOf(s, 'rot'));
    } finally {
      db.close();
    }
    const get = await fetch(`${s.url}/${BUCKET}/rot`);
    expect(get.status).toBe(599);
    expect(await get.json()).toEqual({ error: expect.stringMatching(/corrupt/) });
    expect((await range(s, 'rot', 'bytes=4900-5100')).status).toBe(599);
    const st = await rawOp(s, `/stat/${entry(BUCKET, 'rot')}`, { method: 'GET' });
    expect(st.json).toMatchObject({ corrupt: true, fsize: bytes.length });
  });

  it('copy and move share the inline bytes; the last delete frees them', async () => {
    const id = await blobIdOf(s, 'small');
    expect((await rawOp(s, `/copy/${entry(BUCKET, 'small')}/${entry(BUCKET, 'small-copy')}`)).status).toBe(200);
    expect((await rawOp(s, `/move/${entry(BUCKET, 'small-copy')}/${entry(BUCKET, 'small-moved')}`)).status).toBe(200);
    expect(await blobIdOf(s, 'small-moved')).toBe(id);
    expect((await rawOp(s, `/delete/${entry(BUCKET, 'small')}`)).status).toBe(200);
    await expectAbsent(s, BUCKET, 'small');
    await expectStored(s, BUCKET, 'small-moved', small);
    expect(await s.running.g.meta.inlineBlob(id)).toBeDefined();
    expect((await rawOp(s, `/delete/${entry(BUCKET, 'small-moved')}`)).status).toBe(200);
    expect(await s.running.g.meta.inlineBlob(id)).toBeUndefined();
    // Overwriting an inline object frees its old bytes too.
    await put(s, BUCKET, 'rewrite', seededBytes('rewrite-1', 100));
    const old = await blobIdOf(s, 'rewrite');
    await put(s, BUCKET, 'rewrite', seededBytes('rewrite-2', 100));
    expect(await s.running.g.meta.inlineBlob(old)).toBeUndefined();
    await expectStored(s, BUCKET, 'rewrite', seededBytes('rewrite-2', 100));
  });

  it('runs fops on an inline image, through the result cache', async () => {
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 10, b: 10 } } }).png().toBuffer();
    expect(png.length).toBeLessThan(INLINE_MAX);
    await put(s, BUCKET, 'red.png', png);
    expect(isInlineBlobId(await blobIdOf(s, 'red.png'))).toBe(true);
    const info = await fetch(`${s.url}/${BUCKET}/red.png?imageInfo`);
    expect(await info.json()).toMatchObject({ width: 64, height: 48, format: 'png' });
    for (const expected of ['miss', 'hit']) {
      const res = await fetch(`${s.url}/${BUCKET}/red.png?imageView2/2/w/32`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-granary-cache')).toBe(expected);
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      expect([meta.width, meta.height]).toEqual([32, 24]);
    }
  });

  it('hands subprocess fops (ffmpeg) a private temp file of inline bytes, removed on release', async () => {
    const { readFile, stat } = await import('node:fs/promises');
    const local = await s.running.g.blobs.localFile(await blobIdOf(s, 'edge'));
    expect((await readFile(local.path)).equals(edge)).toBe(true);
    expect((await stat(local.path)).mode & 0o777).toBe(0o600);
    await local.release();
    await expect(stat(local.path)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('keeps inline objects across a restart, and reads a data dir written without inline storage', async () => {
    await s.stop();
    // Written with inline storage off: a file blob, read back by a server with it on.
    s = await startTestServer({ GRANARY_DATA_DIR: dataDir, GRANARY_INLINE_MAX: '0' });
    await put(s, BUCKET, 'file-era', small);
    expect(isInlineBlobId(await blobIdOf(s, 'file-era'))).toBe(false);
    await s.stop();
    s = await startTestServer({ GRANARY_DATA_DIR: dataDir, GRANARY_INLINE_MAX: String(INLINE_MAX) });
    await expectStored(s, BUCKET, 'edge', edge);
    await expectStored(s, BUCKET, 'empty', Buffer.alloc(0));
    await expectStored(s, BUCKET, 'file-era', small);
    expect((await rawOp(s, `/copy/${entry(BUCKET, 'file-era')}/${entry(BUCKET, 'file-era-copy')}`)).status).toBe(200);
    await expectStored(s, BUCKET, 'file-era-copy', small);
  });
});
