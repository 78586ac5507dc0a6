/**
 * Zero-copy assembly: v1 mkfile and v2 complete commit a manifest of the stored pieces instead of a copy.
 * Uploads of every piece layout (v1 blocks of one chunk and of several bput chunks; v2 parts of 4 MiB, 5 MiB,
 * 1 MiB, odd sizes, and 4 MiB parts ended by one larger than 4 MiB) get the etag of docs/development/kodo-protocol.md §7 (checked against
 * test/helpers/etag.ts) and no md5, download byte-identical whole and over many Ranges across piece boundaries;
 * copies share the pieces (the copy outlives its original), overwrites and deletes free the piece files, data
 * survives a restart, a corrupt piece answers 599 and marks the entry, fops read assembled sources.
 */
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWhole, flipStoredByte, storedByte } from '../helpers/bitrot.js';
import { qetag, qetagV2 } from '../helpers/etag.js';
import { seededBytes } from '../helpers/files.js';
import { RawUp, ok, type PartJson } from '../helpers/resumable.js';
import { countBlobs, entry, put, rawOp } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectStored, FIXTURE_IMAGES } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'manifests';

let dataDir: string;
let s: TestServer;
let up: RawUp;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'granary-manifest-'));
  s = await startTestServer({ GRANARY_DATA_DIR: dataDir });
  await createBucket(s, BUCKET);
  up = new RawUp(s.url, s.uploadToken({ scope: BUCKET, detectMime: 1 }));
});

afterAll(async () => {
  await s?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** v1: `content` in 4 MiB blocks, each sent as chunks of `chunkSize` bytes (mkblk, then bput); mkfile. */
async function uploadV1(key: string, content: Buffer, chunkSize = 4 * MiB, client = up): Promise<{ hash: string; key: string }> {
  const ctxs: string[] = [];
  for (let off = 0; off < content.length; off += 4 * MiB) {
    const block = content.subarray(off, off + 4 * MiB);
    ctxs.push(await client.block(block, Math.min(chunkSize, block.length)));
  }
  return ok(await client.mkfile(content.length, ctxs, { key }));
}

/** v2: `content` cut into parts of `sizes` bytes (in order, adding up to its length), uploaded, completed. */
async function uploadV2(key: string, content: Buffer, sizes: number[], client = up): Promise<{ hash: string; key: string }> {
  const id = ok<{ uploadId: string }>(await client.init(BUCKET, key)).uploadId;
  const parts: Array<{ partNumber: number; etag: string }> = [];
  let off = 0;
  for (const [i, size] of sizes.entries()) {
    const data = content.subarray(off, off + size);
    off += size;
    parts.push({ partNumber: i + 1, etag: ok<PartJson>(await client.part(BUCKET, key, id, i + 1, data)).etag });
  }
  expect(off).toBe(content.length);
  return ok(await client.complete(BUCKET, key, id, { parts }));
}

/** Splits `content` into the pieces of `sizes` bytes. */
function cut(content: Buffer, sizes: number[]): Buffer[] {
  let off = 0;
  return sizes.map((n) => content.subarray(off, (off += n)));
}

const url = (key: string): string => `${s.url}/${BUCKET}/${encodeURIComponent(key)}`;

async function stat(key: string): Promise<Record<string, unknown>> {
  const r = await sdk<Record<string, unknown>>(s.bucketManager().stat(BUCKET, key));
  expect(r.status).toBe(200);
  return r.data;
}

/** Range headers around every piece boundary (`bounds`: the offsets where a piece starts), plus suffix and open ones. */
function rangesAcross(size: number, bounds: number[]): string[] {
  const out = new Set<string>([`bytes=0-${size - 1}`, `bytes=1-${size - 2}`, 'bytes=0-0', `bytes=${size - 1}-`, `bytes=-1`]);
  for (const b of bounds) {
    out.add(`bytes=${b - 1}-${b}`); // the last byte of one piece and the first of the next
    out.add(`bytes=${Math.max(0, b - 4100)}-${Math.min(size - 1, b + 4099)}`); // inside both pieces
    out.add(`bytes=${b}-${b}`);
    out.add(`bytes=${b}-`); // open-ended from a piece start
    out.add(`bytes=-${size - b + 1}`); // suffix starting one byte before the boundary
  }
  if (bounds.length >= 2) out.add(`bytes=${(bounds[0] as number) - 7}-${(bounds[bounds.length - 1] as number) + 7}`); // across all
  return [...out];
}

/** Expected bytes of a Range header (one range, as the server parses it) of `content`. */
function slice(content: Buffer, header: string): Buffer {
  const [a, b] = header.slice('bytes='.length).split('-') as [string, string];
  if (a === '') return content.subarray(content.length - Number(b));
  return content.subarray(Number(a), b === '' ? content.length : Number(b) + 1);
}

/** Asserts that every Range of `headers` answers 206 with exactly those bytes of `content`. */
async function expectRanges(key: string, content: Buffer, headers: string[]): Promise<void> {
  for (const range of headers) {
    const r = await fetchWhole(url(key), { range });
    expect(r.status, range).toBe(206);
    expect(r.body?.equals(slice(content, range)), `bytes of ${range}`).toBe(true);
  }
}

/** Piece boundaries of `sizes`: the offset of every piece but the first. */
function boundsOf(sizes: number[]): number[] {
  const out: number[] = [];
  let off = 0;
  for (const n of sizes.slice(0, -1)) out.push((off += n));
  return out;
}

/** The blob files of an entry's pieces (asserting it is a manifest of `count` pieces when given). */
async function pieceFiles(key: string, count?: number): Promise<string[]> {
  const rec = await s.running.g.meta.getObject(BUCKET, key);
  expect(rec?.blobId).toMatch(/^m[0-9a-f]{32}$/);
  if (count !== undefined) expect(rec?.pieces).toHaveLength(count);
  const files: string[] = [];
  let off = 0;
  for (const p of rec?.pieces ?? []) {
    files.push((await storedByte(s, BUCKET, key, off)).path);
    off += p.size;
  }
  return files;
}

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);

interface Layout {
  name: string;
  size: number;
  /** Piece sizes (v2 parts, or v1 chunks for the expected boundaries). */
  pieces: number[];
  upload: (key: string, content: Buffer) => Promise<{ hash: string }>;
  etag: (content: Buffer) => string;
}

/** 4 MiB blocks: a v1 object of `size` bytes has these blocks. */
const blocksOf = (size: number): number[] => cut(Buffer.alloc(size), Array.from({ length: Math.ceil(size / (4 * MiB)) }, () => 4 * MiB)).map((b) => b.length);

const v2 = (name: string, sizes: number[]): Layout => ({
  name,
  size: sizes.reduce((a, b) => a + b, 0),
  pieces: sizes,
  upload: (key, content) => uploadV2(key, content, sizes),
  etag: (content) => qetagV2(cut(content, sizes)),
});

const CHUNK = MiB + 17;
/** The chunks of one v1 block sent in CHUNK-byte bputs. */
const chunksOf = (block: number): number[] => Array.from({ length: Math.ceil(block / CHUNK) }, (_, i) => Math.min(CHUNK, block - i * CHUNK));

const LAYOUTS: Layout[] = [
  {
    name: 'v1, 4 MiB blocks of one chunk',
    size: 9 * MiB + 123,
    pieces: blocksOf(9 * MiB + 123),
    upload: (key, content) => uploadV1(key, content),
    etag: qetag,
  },
  {
    name: 'v1, blocks of several bput chunks',
    size: 8 * MiB + 5000,
    pieces: blocksOf(8 * MiB + 5000).flatMap(chunksOf),
    upload: (key, content) => uploadV1(key, content, CHUNK),
    etag: qetag,
  },
  v2('v2, 4 MiB parts', [4 * MiB, 4 * MiB, 4 * MiB, 2 * MiB + 512 * 1024]),
  v2('v2, 5 MiB parts', [5 * MiB, 5 * MiB, 3 * MiB]),
  v2('v2, 1 MiB parts', [MiB, MiB, MiB, MiB, MiB, 7]),
  v2('v2, odd part sizes', [MiB + 1, 333_333, 4 * MiB, 2 * MiB - 5]),
  v2('v2, 4 MiB parts ended by a 9 MiB one', [4 * MiB, 4 * MiB, 9 * MiB + 3]),
  v2('v2, one part of 6 MiB', [6 * MiB]),
];

describe.each(LAYOUTS)('$name', (layout) => {
  const key = `layouts/${layout.name}`;
  const content = seededBytes(layout.name, layout.size);

  it('stores a manifest of the pieces, with the §7 etag, no md5, and the bytes whole and over Ranges across boundaries', async () => {
    const r = await layout.upload(key, content);
    expect(r.hash).toBe(layout.etag(content));
    const st = await stat(key);
    expect(st).toMatchObject({ fsize: layout.size, hash: layout.etag(content) });
    expect(st).not.toHaveProperty('md5');
    expect(await pieceFiles(key, layout.pieces.length)).toHaveLength(layout.pieces.length);
    const d = await expectStored(s, BUCKET, key, content);
    expect(d.headers.get('etag')).toBe(`"${layout.etag(content)}"`);
    await expectRanges(key, content, rangesAcross(layout.size, boundsOf(layout.pieces)));
  });
});

describe('entries sharing pieces', () => {
  const content = seededBytes('shared', 6 * MiB + 11);
  const sizes = [2 * MiB, 2 * MiB, 2 * MiB + 11];

  it('a copy outlives its original; the pieces go with the last entry', async () => {
    await uploadV2('shared/original', content, sizes);
    const files = await pieceFiles('shared/original', 3);
    ok(await rawOp(s, `/copy/${entry(BUCKET, 'shared/original')}/${entry(BUCKET, 'shared/copy')}`));
    ok(await rawOp(s, `/delete/${entry(BUCKET, 'shared/original')}`));
    for (const f of files) expect(await exists(f)).toBe(true);
    await expectStored(s, BUCKET, 'shared/copy', content);
    await expectRanges('shared/copy', content, rangesAcross(content.length, boundsOf(sizes)));
    ok(await rawOp(s, `/move/${entry(BUCKET, 'shared/copy')}/${entry(BUCKET, 'shared/moved')}`));
    await expectStored(s, BUCKET, 'shared/moved', content);
    ok(await rawOp(s, `/delete/${entry(BUCKET, 'shared/moved')}`));
    for (const f of files) expect(await exists(f)).toBe(false);
    expect(await s.running.g.meta.pendingBlobDeletions(10)).toEqual([]);
  });

  it('an overwrite frees the old pieces (by a plain upload or another manifest)', async () => {
    await uploadV1('shared/overwritten', content);
    const first = await pieceFiles('shared/overwritten', 2);
    const next = seededBytes('shared-next', 3 * MiB);
    await uploadV2('shared/overwritten', next, [MiB, 2 * MiB], up.as(s.uploadToken({ scope: `${BUCKET}:shared/overwritten` })));
    for (const f of first) expect(await exists(f)).toBe(false);
    await expectStored(s, BUCKET, 'shared/overwritten', next);
    const second = await pieceFiles('shared/overwritten', 2);
    const plain = Buffer.from('now a form upload');
    await put(s, BUCKET, 'shared/overwritten', plain);
    for (const f of second) expect(await exists(f)).toBe(false);
    await expectStored(s, BUCKET, 'shared/overwritten', plain);
  });

  it('uploading the same content twice under insert semantics keeps one manifest and frees the second upload\'s pieces', async () => {
    const once = seededBytes('twice', 2 * MiB);
    await uploadV2('shared/twice', once, [MiB, MiB]);
    const kept = await pieceFiles('shared/twice', 2);
    const files = await countBlobs(s);
    const again = await uploadV2('shared/twice', once, [MiB, MiB]); // scope "bucket": insert semantics, identical → 200
    expect(again.hash).toBe(qetagV2(cut(once, [MiB, MiB])));
    expect(await pieceFiles('shared/twice', 2)).toEqual(kept);
    expect(await countBlobs(s)).toBe(files);
    expect(await s.running.g.meta.pendingBlobDeletions(10)).toEqual([]);
  });
});

describe('a restart', () => {
  it('keeps assembled objects: whole and ranged downloads are byte-identical afterwards', async () => {
    await s.stop();
    s = await startTestServer({ GRANARY_DATA_DIR: dataDir });
    up = new RawUp(s.url, s.uploadToken({ scope: BUCKET, detectMime: 1 }));
    for (const layout of LAYOUTS.slice(0, 3)) {
      const content = seededBytes(layout.name, layout.size);
      await expectStored(s, BUCKET, `layouts/${layout.name}`, content);
      await expectRanges(`layouts/${layout.name}`, content, rangesAcross(layout.size, boundsOf(layout.pieces)).slice(0, 8));
    }
  });
});

describe('a corrupt piece', () => {
  it('in the middle: the whole GET never completes, stat says corrupt, later reads answer 599', async () => {
    const content = seededBytes('rot-mid', 3 * MiB);
    await uploadV2('rot/mid', content, [MiB, MiB, MiB]);
    await flipStoredByte(s, BUCKET, 'rot/mid', MiB + 1000);
    const first = await fetchWhole(url('rot/mid'));
    expect(first.body === undefined || first.status === 599, `status ${first.status}`).toBe(true);
    expect(await stat('rot/mid')).toMatchObject({ corrupt: true });
    const again = await fetchWhole(url('rot/mid'));
    expect(again.status).toBe(599);
    expect(JSON.parse(again.body?.toString() ?? '{}').error).toMatch(/corrupt/);
    expect((await fetchWhole(url('rot/mid'), { range: 'bytes=0-9' })).status).toBe(599);
  });

  it('at the start: 599 before the first byte, then marked; re-uploading the content heals the entry', async () => {
    const content = seededBytes('rot-first', 2 * MiB + 3);
    await uploadV2('rot/first', content, [MiB, MiB + 3]);
    await flipStoredByte(s, BUCKET, 'rot/first', 10);
    const r = await fetchWhole(url('rot/first'), { range: `bytes=0-${MiB + 100}` });
    expect(r.status).toBe(599);
    expect(JSON.parse(r.body?.toString() ?? '{}').error).toMatch(/corrupt/);
    expect(await stat('rot/first')).toMatchObject({ corrupt: true });
    await uploadV2('rot/first', content, [MiB, MiB + 3]);
    expect(await stat('rot/first')).not.toHaveProperty('corrupt');
    await expectStored(s, BUCKET, 'rot/first', content);
  });
});

describe('fops on assembled sources', () => {
  it('imageInfo and imageView2 answer as for the same image uploaded whole; the MIME type is sniffed from the first piece', async () => {
    const jpeg = await readFile(join(FIXTURE_IMAGES, 'hdr_canon_hdr_YES.jpg'));
    const third = Math.floor(jpeg.length / 3);
    await uploadV2('fop/assembled.jpg', jpeg, [third, third, jpeg.length - 2 * third]);
    await uploadV1('fop/v1.jpg', jpeg, 100 * 1024);
    await put(s, BUCKET, 'fop/whole.jpg', jpeg);
    const st = await stat('fop/assembled.jpg');
    expect(st, JSON.stringify(st)).toMatchObject({ mimeType: 'image/jpeg', hash: qetagV2(cut(jpeg, [third, third, jpeg.length - 2 * third])) });
    const info = await fetchWhole(`${url('fop/assembled.jpg')}?imageInfo`);
    expect(info.status).toBe(200);
    expect(JSON.parse(info.body?.toString() ?? '{}')).toMatchObject({ format: 'jpeg' });
    const thumbs = await Promise.all(
      ['fop/whole.jpg', 'fop/assembled.jpg', 'fop/v1.jpg'].map((k) => fetchWhole(`${url(k)}?imageView2/2/w/64/format/png`)),
    );
    for (const t of thumbs) expect(t.status).toBe(200);
    for (const t of thumbs.slice(1)) expect(t.body?.equals(thumbs[0]?.body ?? Buffer.alloc(0))).toBe(true);
  });

  it('avinfo reads an assembled video through a local file of its pieces', async () => {
    const video = await readFile(join(FIXTURE_IMAGES, '..', 'video', 'big_buck_bunny.mp4'));
    await uploadV2('fop/bunny.mp4', video, [MiB, MiB, video.length - 2 * MiB]);
    const r = await fetchWhole(`${url('fop/bunny.mp4')}?avinfo`);
    expect(r.status, r.body?.toString()).toBe(200);
    expect(JSON.parse(r.body?.toString() ?? '{}')).toMatchObject({ format: { size: String(video.length) } });
  });
});

describe('deleting everything', () => {
  it('removes every piece file and every manifest row', async () => {
    const keys: string[] = [];
    for (let marker: string | undefined; ; ) {
      const r = await sdk<{ items: Array<{ key: string }>; marker?: string }>(
        s.bucketManager().listPrefix(BUCKET, { limit: 1000, ...(marker ? { marker } : {}) }),
      );
      keys.push(...r.data.items.map((i) => i.key));
      if (!r.data.marker) break;
      marker = r.data.marker;
    }
    const files: string[] = [];
    for (const key of keys) {
      const rec = await s.running.g.meta.getObject(BUCKET, key);
      if (rec?.pieces) files.push(...(await pieceFiles(key)));
    }
    expect(files.length).toBeGreaterThan(20);
    for (const key of keys) ok(await rawOp(s, `/delete/${entry(BUCKET, key)}`));
    for (const f of files) expect(await exists(f), f).toBe(false);
    expect(await s.running.g.meta.pendingBlobDeletions(10)).toEqual([]);
    expect((await s.running.g.meta.listBlobStates('', 1000)).filter((b) => b.id.startsWith('m'))).toEqual([]);
  });
});
