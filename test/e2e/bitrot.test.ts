/**
 * Bitrot: one byte flipped in stored blobs of 100 B, 3 MiB and 9 MiB is never served as good data.
 * Whole GETs fail (a 599 JSON answer before the first byte, or a transfer cut before the corrupt block), the
 * entry is marked corrupt (stat shows it, later reads answer 599 at once, fops refuse it), `granary scrub` names
 * every corrupt entry — also those nobody read — and the background scrubber finds cold corruption. Ranges verify
 * the blocks they touch; re-uploading the content heals the entry; blobs stored before checksums existed are
 * checked against their MD5 and given checksums.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWhole, flipByte, flipStoredByte } from '../helpers/bitrot.js';
import { runCli } from '../helpers/cli.js';
import { seededBytes, writeSeededFile } from '../helpers/files.js';
import { RawUp, upToken } from '../helpers/resumable.js';
import { put } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';
import type { Scrubber } from '../../src/objects/scrubber.js';

const MiB = 1024 * 1024;
const BUCKET = 'rot';
/** Sizes and where the flipped byte goes (the 3 MiB one is cut mid-transfer: its first blocks are intact). */
const CASES = [
  { name: '100 B', size: 100, offset: 50 },
  { name: '3 MiB', size: 3 * MiB, offset: 2 * MiB + 7 },
  { name: '9 MiB', size: 9 * MiB, offset: 9 * MiB - 3 },
] as const;

let s: TestServer;
let dir: string;

/** Stores `content` under `key` with the SDK: form upload, or resumable v1 (mkblk/mkfile) for 9 MiB. */
async function store(key: string, content: Buffer): Promise<void> {
  if (content.length < 8 * MiB) {
    await put(s, BUCKET, key, content);
    return;
  }
  const path = join(dir, `${key.replace(/\W/g, '_')}.bin`);
  await writeFile(path, content);
  const token = s.uploadToken({ scope: `${BUCKET}:${key}` });
  const r = await sdk(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, key, path, new qiniu.resume_up.PutExtra()));
  expect(r.status).toBe(200);
}

const url = (key: string): string => `${s.url}/${BUCKET}/${encodeURIComponent(key)}`;

async function stat(key: string): Promise<Record<string, unknown>> {
  const r = await sdk<Record<string, unknown>>(s.bucketManager().stat(BUCKET, key));
  expect(r.status).toBe(200);
  return r.data;
}

/** The scrub CLI on the server's data dir (it runs beside the server: SQLite WAL). */
function scrub(): { status: number | null; lines: string[] } {
  const r = runCli(['scrub', '--data-dir', s.dataDir], { GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK });
  return { status: r.status, lines: r.stdout.trim().split('\n') };
}

beforeAll(async () => {
  s = await startTestServer({ GRANARY_SCRUB_BYTES_PER_SEC: String(1024 * MiB) });
  dir = await mkdtemp(join(tmpdir(), 'granary-bitrot-'));
  await createBucket(s, BUCKET);
});

afterAll(async () => {
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a flipped byte in a blob', () => {
  const contents = new Map<string, Buffer>();

  beforeAll(async () => {
    for (const c of CASES) {
      for (const set of ['read', 'cold']) {
        const key = `${set}/${c.name}`;
        const content = seededBytes(key, c.size);
        contents.set(key, content);
        await store(key, content);
      }
    }
    // Every entry reads back intact before anything is flipped.
    for (const [key, content] of contents) expect((await fetchWhole(url(key))).body?.equals(content)).toBe(true);
    for (const c of CASES) {
      for (const set of ['read', 'cold']) await flipStoredByte(s, BUCKET, `${set}/${c.name}`, c.offset);
    }
  });

  it.each(CASES)('$name: the whole GET fails (never a 200 with those bytes), later GETs answer 599 at once', async (c) => {
    const key = `read/${c.name}`;
    const first = await fetchWhole(url(key));
    // Either the JSON 599 before any byte, or headers then a cut transfer: never a complete body.
    expect(first.body === undefined || first.status === 599, `status ${first.status}`).toBe(true);
    if (first.status === 599) expect(JSON.parse(first.body?.toString() ?? '{}')).toEqual({ error: expect.stringMatching(/corrupt/) });
    const again = await fetchWhole(url(key));
    expect(again.status).toBe(599);
    expect(JSON.parse(again.body?.toString() ?? '{}').error).toMatch(/corrupt/);
    expect((await fetchWhole(url(key), { range: 'bytes=0-9' })).status).toBe(599);
    expect((await fetch(url(key), { method: 'HEAD' })).status).toBe(599);
    expect(await stat(key)).toMatchObject({ corrupt: true, fsize: c.size });
  });

  it('a range verifies the blocks it touches: intact blocks serve, the corrupt one does not', async () => {
    const key = 'cold/9 MiB';
    const content = contents.get(key) as Buffer;
    const intact = await fetchWhole(url(key), { range: 'bytes=1000-1999' });
    expect(intact.status).toBe(206);
    expect(intact.body?.equals(content.subarray(1000, 2000))).toBe(true);
    // The flipped byte is 3 bytes before the end: the last block is refused before any byte goes out.
    const bad = await fetchWhole(url(key), { range: `bytes=${9 * MiB - 10}-` });
    expect(bad.status).toBe(599);
    expect(await stat(key)).toMatchObject({ corrupt: true });
  });

  it('granary scrub names every corrupt entry, read or not, and exits with status 2', async () => {
    const r = scrub();
    expect(r.status).toBe(2);
    const named = r.lines.filter((l) => l.startsWith('corrupt\t')).map((l) => l.split('\t')[1]);
    expect(named.sort()).toEqual([...contents.keys()].map((k) => `${BUCKET}:${k}`).sort());
    expect(r.lines.at(-1)).toMatch(/^scrubbed \d+ blobs, \d+ bytes in .* 6 corrupt/);
    for (const c of CASES) expect(await stat(`cold/${c.name}`)).toMatchObject({ corrupt: true });
  });

  it('uploading the same content again heals the entry (insertOnly too)', async () => {
    const key = 'read/100 B';
    const content = contents.get(key) as Buffer;
    await put(s, BUCKET, key, content, { policy: { insertOnly: 1 } });
    const d = await fetchWhole(url(key));
    expect(d.status).toBe(200);
    expect(d.body?.equals(content)).toBe(true);
    expect(await stat(key)).not.toHaveProperty('corrupt');
  });
});

describe('resumable pieces', () => {
  it('a v1 chunk that rots before mkfile fails the assembly with 599; nothing is stored under the key', async () => {
    const before = new Set(await blobFiles());
    const up = new RawUp(s.url, upToken({ scope: BUCKET }));
    const chunk = seededBytes('piece', 300 * 1024);
    const blk = (await up.mkblk(chunk.length, chunk)).json as { ctx: string };
    const added = (await blobFiles()).filter((f) => !before.has(f));
    expect(added).toHaveLength(1);
    await flipByte(added[0] as string, 1000);
    const made = await up.mkfile(chunk.length, [blk.ctx], { key: 'pieces/rotten' });
    expect(made.status, made.text).toBe(599);
    expect(made.text).toMatch(/corrupt/);
    expect((await fetchWhole(url('pieces/rotten'))).status).toBe(404);
  });
});

/** Every blob file under the data dir. */
async function blobFiles(): Promise<string[]> {
  const entries = await readdir(join(s.dataDir, 'blobs'), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && /^[0-9a-f]{32}$/.test(e.name)).map((e) => join(e.parentPath, e.name));
}

describe('fops on a corrupt source', () => {
  it('imageView2 and imageInfo refuse it with 599; the entry is marked', async () => {
    const jpeg = await readFile(join(FIXTURE_IMAGES, (await import('node:fs')).readdirSync(FIXTURE_IMAGES).find((f) => /\.jpe?g$/i.test(f)) as string));
    await put(s, BUCKET, 'photo.jpg', jpeg, { mimeType: 'image/jpeg' });
    await flipStoredByte(s, BUCKET, 'photo.jpg', Math.floor(jpeg.length / 2));
    const r = await fetchWhole(`${url('photo.jpg')}?imageView2/2/w/100`);
    expect(r.status).toBe(599);
    expect((await fetchWhole(`${url('photo.jpg')}?imageInfo`)).status).toBe(599);
    expect(await stat('photo.jpg')).toMatchObject({ corrupt: true });
  });
});

describe('the background scrubber', () => {
  it('finds corruption in data nobody reads once a pass is due', async () => {
    const content = seededBytes('cold-scrubber', 2 * MiB + 5);
    await put(s, BUCKET, 'scrubber/cold', content);
    await flipStoredByte(s, BUCKET, 'scrubber/cold', MiB);
    const scrubber = s.running.g.scrubber as Scrubber | undefined; // the context holds its status view; the test drives it
    if (!scrubber) throw new Error('no scrubber');
    expect(scrubber.status()).toMatchObject({ enabled: true, lastPass: expect.any(Object) });
    s.clock.advance(31 * 86400); // GRANARY_SCRUB_INTERVAL_DAYS defaults to 30
    const pass = scrubber.nextPass();
    scrubber.wake();
    const result = await pass;
    s.clock.advance(-31 * 86400); // back, so signed requests and tokens of the next tests are current again
    expect(result.corrupt.map((f) => `${f.bucket}:${f.key}`)).toContain(`${BUCKET}:scrubber/cold`);
    expect(await stat('scrubber/cold')).toMatchObject({ corrupt: true });
    const ready = (await (await fetch(`${s.url}/health/ready`)).json()) as { checks: { scrub: { lastPass: { corrupt: number } } } };
    expect(ready.checks.scrub.lastPass.corrupt).toBeGreaterThan(0);
  });
});

describe('blobs stored before checksums existed', () => {
  /** Drops the checksums of a blob, as a data dir of an earlier version has them. */
  function forgetSums(blobId: string): void {
    const db = new Database(join(s.dataDir, 'meta.db'));
    try {
      db.prepare('UPDATE blobs SET sums = NULL, block_bytes = NULL WHERE id = ?').run(blobId);
    } finally {
      db.close();
    }
  }

  async function legacy(key: string, content: Buffer): Promise<string> {
    await put(s, BUCKET, key, content);
    const rec = await s.running.g.meta.getObject(BUCKET, key);
    forgetSums(rec?.blobId as string);
    expect((await s.running.g.meta.getObject(BUCKET, key))?.sums).toBeUndefined();
    return rec?.blobId as string;
  }

  it('a whole read checks the MD5 and records checksums; ranges work before and after', async () => {
    const content = seededBytes('legacy-ok', 5 * MiB);
    await legacy('legacy/ok', content);
    const range = await fetchWhole(url('legacy/ok'), { range: 'bytes=10-19' });
    expect(range.body?.equals(content.subarray(10, 20))).toBe(true);
    const whole = await fetchWhole(url('legacy/ok'));
    expect(whole.status).toBe(200);
    expect(whole.body?.equals(content)).toBe(true);
    expect((await s.running.g.meta.getObject(BUCKET, 'legacy/ok'))?.sums).toBeDefined();
  });

  it('a corrupt one fails its whole read (the last chunk is held back) and is marked', async () => {
    const content = seededBytes('legacy-bad', 3 * MiB);
    await legacy('legacy/bad', content);
    await flipStoredByte(s, BUCKET, 'legacy/bad', 100);
    const whole = await fetchWhole(url('legacy/bad'));
    expect(whole.body).toBeUndefined();
    expect(await stat('legacy/bad')).toMatchObject({ corrupt: true });
  });

  it('granary scrub gives them checksums', async () => {
    const path = join(dir, 'legacy-scrub.bin');
    await writeSeededFile(path, 300 * 1024, 'legacy-scrub');
    await legacy('legacy/scrubbed', await readFile(path));
    const r = scrub();
    expect(r.lines.at(-1)).toMatch(/[1-9]\d* given checksums/);
    expect((await s.running.g.meta.getObject(BUCKET, 'legacy/scrubbed'))?.sums).toBeDefined();
  });
});
