/**
 * Resumable uploads through the official Node SDK (`qiniu.resume_up`, docs/development/kodo-protocol.md §5.5, §6, §13.1): v1
 * (mkblk/mkfile) and v2 (multipart) `putFile` of files on disk of 0 B, 1 B, 4 MiB, 4 MiB + 1 B, 9 MiB and 100 MiB.
 * Each stores byte-identical content (streamed SHA-1 of the download = SHA-1 of the file), answers the rendered
 * returnBody with bare placeholders, `hash` = the etag computed independently (test/helpers/etag.ts), and keeps
 * x: variables and `x-qn-meta-*` metadata (X-Qn-Meta-* on download). Also: v2 with a 6 MiB partSize (0x9e etag,
 * `stat?needparts=true` part sizes), putStream, putFileWithoutKey, discovery config, v1 with an oversized block.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetagOfFile, qetagV2OfFile } from '../helpers/etag.js';
import { downloadSha1, sha1OfFile, writeSeededFile } from '../helpers/files.js';
import { entry, rawOp } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, recordRequests } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'resumable-sdk';
const RETURN_BODY = '{"key":$(key),"hash":$(etag),"fname":$(fname),"fsize":$(fsize),"var_1":$(x:var_1)}';
const MIME = 'application/x-granary-test';

const SIZES = [
  { name: '0 B', size: 0 },
  { name: '1 B', size: 1 },
  { name: '4 MiB', size: 4 * MiB },
  { name: '4 MiB + 1 B', size: 4 * MiB + 1 },
  { name: '9 MiB', size: 9 * MiB },
  { name: '100 MiB', size: 100 * MiB },
];

let s: TestServer;
let dir: string;
/** size → path of a seeded file of that size. */
const files = new Map<number, string>();

beforeAll(async () => {
  s = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), 'granary-resumable-sdk-'));
  for (const size of [...SIZES.map((x) => x.size), 13 * MiB]) {
    const path = join(dir, `file-${size}.bin`);
    await writeSeededFile(path, size, `sdk-${size}`);
    files.set(size, path);
  }
  await createBucket(s, BUCKET);
});

afterAll(async () => {
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Version = 'v1' | 'v2';

/** A PutExtra for `version` with x:var_1, a MIME type and two metadata entries. */
function extraFor(version: Version, opts: { partSize?: number; fname?: string } = {}): qiniu.resume_up.PutExtra {
  return qiniu.resume_up.PutExtra.create(
    opts.fname,
    { 'x:var_1': 'val_1' },
    MIME,
    undefined,
    undefined,
    opts.partSize,
    version,
    { 'x-qn-meta-color': 'red', 'x-qn-meta-Owner': 'alice' },
  );
}

/** Asserts `<BUCKET>/<key>` downloads with the bytes of the file at `path`, its MIME, metadata and etag. */
async function expectSameAsFile(key: string, path: string, hash: string): Promise<void> {
  const d = await downloadSha1(s.url, BUCKET, key);
  expect(d.status).toBe(200);
  expect(d.sha1, `bytes of ${key} differ from ${path}`).toBe(await sha1OfFile(path));
  expect(d.headers.get('content-type')).toBe(MIME);
  expect(d.headers.get('x-qn-meta-color')).toBe('red');
  expect(d.headers.get('x-qn-meta-owner')).toBe('alice');
  expect(d.headers.get('etag')).toBe(`"${hash}"`);
}

describe.each<Version>(['v1', 'v2'])('ResumeUploader.putFile %s', (version) => {
  it.each(SIZES)('$name: byte-identical, returnBody with bare variables, independent etag, metadata', async ({ size }) => {
    const path = files.get(size) as string;
    const key = `${version}/file-${size}.bin`;
    const token = s.uploadToken({ scope: `${BUCKET}:${key}`, returnBody: RETURN_BODY });
    const rec = recordRequests(s);
    const r = await sdk(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, key, path, extraFor(version)));
    rec.stop();
    const hash = await qetagOfFile(path);
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    expect(r.data).toEqual({ key, hash, fname: basename(path), fsize: size, var_1: 'val_1' });
    await expectSameAsFile(key, path, hash);

    // The SDK really spoke the requested protocol version.
    const v1Calls = rec.seen.filter((x) => /^POST \/(mkblk|mkfile)\//.test(x));
    const v2Calls = rec.seen.filter((x) => x.includes('/uploads'));
    if (version === 'v1') {
      expect(v2Calls).toEqual([]);
      expect(v1Calls.filter((x) => x.startsWith('POST /mkblk/'))).toHaveLength(Math.ceil(size / (4 * MiB)));
      expect(v1Calls.filter((x) => x.startsWith('POST /mkfile/'))).toHaveLength(1);
    } else {
      expect(v1Calls).toEqual([]);
      expect(v2Calls.filter((x) => x.startsWith('PUT '))).toHaveLength(Math.ceil(size / (4 * MiB)));
    }

    const st = await sdk<{ fsize: number; hash: string; mimeType: string; 'x-qn-meta': Record<string, string> }>(
      s.bucketManager().stat(BUCKET, key),
    );
    expect(st.data).toMatchObject({ fsize: size, hash, mimeType: MIME, 'x-qn-meta': { color: 'red', Owner: 'alice' } });
  });
});

describe('ResumeUploader, other shapes', () => {
  it('v2 with partSize 6 MiB on a 13 MiB file: the 0x9e etag (starts with n) and part sizes from stat?needparts', async () => {
    const path = files.get(13 * MiB) as string;
    const key = 'v2/six-mib-parts.bin';
    const token = s.uploadToken({ scope: `${BUCKET}:${key}`, returnBody: RETURN_BODY });
    const r = await sdk<{ hash: string }>(
      new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, key, path, extraFor('v2', { partSize: 6 * MiB, fname: 'orig.bin' })),
    );
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    const hash = await qetagV2OfFile(path, 6 * MiB);
    expect(hash).toMatch(/^n/);
    expect(hash).not.toBe(await qetagOfFile(path));
    expect(r.data).toEqual({ key, hash, fname: 'orig.bin', fsize: 13 * MiB, var_1: 'val_1' });
    await expectSameAsFile(key, path, hash);

    const st = await rawOp(s, `/stat/${entry(BUCKET, key)}?needparts=true`, { method: 'GET' });
    expect(st.status, st.text).toBe(200);
    expect(st.json).toMatchObject({ fsize: 13 * MiB, hash, parts: [6 * MiB, 6 * MiB, 1 * MiB] });
    const plain = await sdk<{ hash: string; parts?: unknown }>(s.bucketManager().stat(BUCKET, key));
    expect(plain.data.hash).toBe(hash);
    expect(plain.data.parts).toBeUndefined();
  });

  it.each<Version>(['v1', 'v2'])('%s putStream of a 9 MiB file stream, with the discovery config', async (version) => {
    const path = files.get(9 * MiB) as string;
    const key = `${version}/stream.bin`;
    const token = s.uploadToken({ scope: `${BUCKET}:${key}`, returnBody: RETURN_BODY });
    const stream = createReadStream(path);
    const up = new qiniu.resume_up.ResumeUploader(s.discoveryConfig());
    const r = await sdk(up.putStream(token, key, stream, 9 * MiB, extraFor(version, { fname: 'streamed.bin' })));
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    const hash = await qetagOfFile(path);
    expect(r.data).toEqual({ key, hash, fname: 'streamed.bin', fsize: 9 * MiB, var_1: 'val_1' });
    await expectSameAsFile(key, path, hash);
  });

  it.each<Version>(['v1', 'v2'])('%s putFileWithoutKey stores under the hash and answers the default body with x: vars', async (version) => {
    const path = files.get(4 * MiB + 1) as string;
    const token = s.uploadToken({ scope: BUCKET });
    const r = await sdk(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFileWithoutKey(token, path, extraFor(version)));
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    const hash = await qetagOfFile(path);
    expect(r.data).toEqual({ key: hash, hash, 'x:var_1': 'val_1' });
    await expectSameAsFile(hash, path, hash);
  });

  it('v1 with a 6 MiB partSize sends 6 MiB blocks: mkblk refuses them (400) and nothing is stored', async () => {
    const path = files.get(9 * MiB) as string;
    const key = 'v1/oversized-blocks.bin';
    const token = s.uploadToken({ scope: `${BUCKET}:${key}` });
    const r = await sdk<{ error: string }>(
      new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, key, path, extraFor('v1', { partSize: 6 * MiB })),
    );
    expect(r.status).toBe(400);
    expect(r.data.error).toEqual(expect.any(String));
    expect((await downloadSha1(s.url, BUCKET, key)).status).toBe(404);
  });
});
