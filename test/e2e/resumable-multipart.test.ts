/**
 * Resumable upload v2 (multipart, docs/development/kodo-protocol.md §6) over raw HTTP: resuming an interrupted upload from its listed
 * parts, re-uploading a part number (replaces it, old bytes freed), list parts shape and max-parts paging, abort
 * (→ 612 afterwards), unknown/foreign uploadId (612), Content-MD5 mismatch (400, nothing stored), bad part lists
 * at complete (400; the upload stays usable), `parts: []` (0-byte object), complete fields and the etag rules of §7.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag, qetagOfFile, qetagV2, qetagV2OfFile } from '../helpers/etag.js';
import { seededBytes } from '../helpers/files.js';
import { RawUp, md5Hex, ok, upToken, type PartJson, type PartsJson } from '../helpers/resumable.js';
import { countBlobs } from '../helpers/rs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectError, expectStored } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'multipart-raw';
const EMPTY_ETAG = 'Fto5o-5ea0sNMlW_75VgGJCv2AcJ';

let s: TestServer;
let up: RawUp;

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  up = new RawUp(s.url, s.uploadToken({ scope: BUCKET }));
});
afterAll(async () => s?.stop());

const nowSec = (): number => Math.floor(s.clock.nowMs() / 1000);

/** Starts an upload of `key` and returns its id. */
async function init(key: string | undefined, client = up): Promise<string> {
  return ok<{ uploadId: string }>(await client.init(BUCKET, key)).uploadId;
}

/** Uploads `data` as part `n` and returns its etag. */
async function part(key: string | undefined, id: string, n: number, data: Buffer): Promise<string> {
  const j = ok<PartJson>(await up.part(BUCKET, key, id, n, data));
  expect(j.md5).toBe(md5Hex(data));
  return j.etag;
}

describe('the independent etag helpers', () => {
  it('match the vectors of §7, stream files, and give the plain qetag when every part but the last is 4 MiB', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'granary-etag-'));
    try {
      const path = join(dir, 'sevens.bin');
      await writeFile(path, Buffer.alloc(4 * MiB + 10, 7));
      expect(await qetagOfFile(path)).toBe('lrStvm4Y3Hueha7WZO5cr_dSW_Dg');
      expect(qetagV2([Buffer.alloc(4 * MiB, 7), Buffer.alloc(10, 7)])).toBe('lrStvm4Y3Hueha7WZO5cr_dSW_Dg');
      expect(await qetagV2OfFile(path, 4 * MiB)).toBe('lrStvm4Y3Hueha7WZO5cr_dSW_Dg');
      const mixed = qetagV2([Buffer.alloc(MiB, 7), Buffer.alloc(3 * MiB + 10, 7)]);
      expect(mixed).toMatch(/^n/);
      expect(await qetagV2OfFile(path, MiB)).toBe(qetagV2([0, 1, 2, 3, 4].map((i) => Buffer.alloc(i < 4 ? MiB : 10, 7))));
      await writeFile(path, Buffer.alloc(0));
      expect(await qetagOfFile(path)).toBe(EMPTY_ETAG);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('initiate', () => {
  it('answers {uploadId, expireAt ≈ now + 7 days}', async () => {
    const j = ok<{ uploadId: string; expireAt: number }>(await up.init(BUCKET, 'init.bin'));
    expect(j).toEqual({ uploadId: expect.any(String), expireAt: expect.any(Number) });
    expect(j.expireAt).toBeGreaterThan(nowSec() + 6 * 86400);
    expect(j.expireAt).toBeLessThanOrEqual(nowSec() + 8 * 86400);
  });

  it('refuses a bucket other than the scope (403), a missing scope bucket (631) and a missing token (401)', async () => {
    expectError(await up.init('other-bucket', 'k'), 403);
    expectError(await up.as(s.uploadToken({ scope: 'no-such-bucket' })).init('no-such-bucket', 'k'), 631);
    expectError(await up.as(undefined).init(BUCKET, 'k'), 401);
  });
});

describe('resuming an interrupted upload', () => {
  it('lists the parts sent before the interruption, takes only the missing one, and completes byte-identical', async () => {
    const key = 'resumed.bin';
    const content = seededBytes('resumed', 10 * MiB);
    const parts = [content.subarray(0, 4 * MiB), content.subarray(4 * MiB, 8 * MiB), content.subarray(8 * MiB)];
    const id = await init(key);
    await part(key, id, 1, parts[0] as Buffer);
    await part(key, id, 2, parts[1] as Buffer);
    // "Interrupted": the first client is gone; a new one knows only the uploadId.
    const again = new RawUp(s.url, s.uploadToken({ scope: `${BUCKET}:${key}` }));
    const listed = ok<PartsJson>(await again.list(BUCKET, key, id));
    expect(listed.parts.map((p) => [p.partNumber, p.size])).toEqual([
      [1, 4 * MiB],
      [2, 4 * MiB],
    ]);
    const third = ok<PartJson>(await again.part(BUCKET, key, id, 3, parts[2] as Buffer));
    const list = [...listed.parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag })), { partNumber: 3, etag: third.etag }];
    const r = ok<{ key: string; hash: string }>(await again.complete(BUCKET, key, id, { parts: list }));
    expect(r).toEqual({ key, hash: qetag(content) });
    expect(qetagV2(parts as Buffer[])).toBe(qetag(content));
    await expectStored(s, BUCKET, key, content);
    expectError(await again.list(BUCKET, key, id), 612); // the upload is gone once the object exists
  });
});

describe('parts', () => {
  it('list parts: {uploadId, expireAt, partNumberMarker, parts:[{partNumber, etag, size, putTime}]}, ascending, paged by max-parts', async () => {
    const key = 'listed.bin';
    const id = await init(key);
    const expireAt = ok<PartsJson>(await up.list(BUCKET, key, id)).expireAt;
    const etags = new Map<number, string>();
    for (const n of [5, 3, 1, 4, 2]) etags.set(n, await part(key, id, n, seededBytes(`p${n}`, 1000 + n)));
    const full = ok<PartsJson>(await up.list(BUCKET, key, id));
    expect(full).toEqual({
      uploadId: id,
      expireAt,
      partNumberMarker: 0,
      parts: [1, 2, 3, 4, 5].map((n) => ({ partNumber: n, etag: etags.get(n), size: 1000 + n, putTime: expect.any(Number) })),
    });
    for (const p of full.parts) expect(Math.abs(p.putTime - nowSec())).toBeLessThan(60);

    const page1 = ok<PartsJson>(await up.list(BUCKET, key, id, 'max-parts=2'));
    expect([page1.parts.map((p) => p.partNumber), page1.partNumberMarker]).toEqual([[1, 2], 2]);
    const page2 = ok<PartsJson>(await up.list(BUCKET, key, id, 'max-parts=2&part-number-marker=2'));
    expect([page2.parts.map((p) => p.partNumber), page2.partNumberMarker]).toEqual([[3, 4], 4]);
    const page3 = ok<PartsJson>(await up.list(BUCKET, key, id, 'max-parts=2&part-number_marker=4'));
    expect([page3.parts.map((p) => p.partNumber), page3.partNumberMarker]).toEqual([[5], 0]);
  });

  it('re-uploading a part number replaces it (the old bytes are freed; its etag no longer completes)', async () => {
    const key = 'replaced.bin';
    const first = seededBytes('first', 3000);
    const second = seededBytes('second', 2000);
    const id = await init(key);
    const oldEtag = await part(key, id, 1, first);
    const blobs = await countBlobs(s);
    const newEtag = await part(key, id, 1, second);
    expect(await countBlobs(s)).toBe(blobs);
    expect(ok<PartsJson>(await up.list(BUCKET, key, id)).parts).toEqual([
      { partNumber: 1, etag: newEtag, size: 2000, putTime: expect.any(Number) },
    ]);
    expectError(await up.complete(BUCKET, key, id, { parts: [{ partNumber: 1, etag: oldEtag }] }), 400);
    ok(await up.complete(BUCKET, key, id, { parts: [{ partNumber: 1, etag: newEtag }] }));
    await expectStored(s, BUCKET, key, second);
  });

  it('a Content-MD5 mismatch is refused (400) and the part is not stored; a previous copy of the part stays', async () => {
    const key = 'md5.bin';
    const data = seededBytes('md5', 5000);
    const id = await init(key);
    const blobs = await countBlobs(s);
    expectError(await up.part(BUCKET, key, id, 1, data, md5Hex(Buffer.from('other'))), 400);
    expect(ok<PartsJson>(await up.list(BUCKET, key, id)).parts).toEqual([]);
    expect(await countBlobs(s)).toBe(blobs);
    const etag = ok<PartJson>(await up.part(BUCKET, key, id, 1, data, md5Hex(data).toUpperCase())).etag;
    expectError(await up.part(BUCKET, key, id, 1, seededBytes('x', 10), md5Hex(data)), 400);
    expect(ok<PartsJson>(await up.list(BUCKET, key, id)).parts.map((p) => p.etag)).toEqual([etag]);
    ok(await up.part(BUCKET, key, id, 2, data, false)); // no Content-MD5 at all is fine
  });

  it('refuses part numbers outside 1..10000 (400)', async () => {
    const id = await init('numbers.bin');
    for (const n of [0, 10001]) expectError(await up.part(BUCKET, 'numbers.bin', id, n, Buffer.from('x')), 400);
    ok(await up.part(BUCKET, 'numbers.bin', id, 10000, Buffer.from('x')));
  });

  it('refuses part numbers that are not plain decimal digits (400), nothing stored', async () => {
    const id = await init('number-forms.bin');
    for (const n of ['0x10', '1e3', '+5', '5.0', '%205', '-1', 'abc', '%EF%BC%91']) {
      expectError(await up.part(BUCKET, 'number-forms.bin', id, n, Buffer.from('x')), 400);
    }
    expect((ok<PartsJson>(await up.list(BUCKET, 'number-forms.bin', id))).parts).toEqual([]);
    expect(ok<PartJson>(await up.part(BUCKET, 'number-forms.bin', id, '007', Buffer.from('x'))).md5).toBe(md5Hex(Buffer.from('x')));
  });
});

describe('unknown, foreign and aborted uploads → 612', () => {
  it('an unknown uploadId is 612 for part, list, complete and abort', async () => {
    const id = 'ffffffffffffffffffffffffffffffff';
    expectError(await up.part(BUCKET, 'k', id, 1, Buffer.from('x')), 612);
    expectError(await up.list(BUCKET, 'k', id), 612);
    expectError(await up.complete(BUCKET, 'k', id, { parts: [] }), 612);
    expectError(await up.abort(BUCKET, 'k', id), 612);
  });

  it('an uploadId used with another key, no key, or another account\'s token is 612', async () => {
    const id = await init('mine.bin');
    expectError(await up.part(BUCKET, 'theirs.bin', id, 1, Buffer.from('x')), 612);
    expectError(await up.part(BUCKET, undefined, id, 1, Buffer.from('x')), 612);
    expectError(await up.complete(BUCKET, 'theirs.bin', id, { parts: [] }), 612);
    const pair = await s.running.g.keyIndex.create(0);
    const alice = up.as(upToken({ scope: BUCKET }, new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey)));
    expectError(await alice.part(BUCKET, 'mine.bin', id, 1, Buffer.from('x')), 612);
    expectError(await alice.list(BUCKET, 'mine.bin', id), 612);
    expectError(await alice.abort(BUCKET, 'mine.bin', id), 612);
    ok(await up.list(BUCKET, 'mine.bin', id));
  });

  it('abort answers 200 with {} (every 2xx JSON answer has a JSON body), frees the parts, and every later call is 612', async () => {
    const key = 'aborted.bin';
    const blobs = await countBlobs(s);
    const id = await init(key);
    const etag = await part(key, id, 1, seededBytes('ab', 4000));
    expect(await countBlobs(s)).toBe(blobs + 1);
    const a = await up.abort(BUCKET, key, id);
    expect([a.status, a.text]).toEqual([200, '{}']);
    expect(await countBlobs(s)).toBe(blobs);
    expectError(await up.part(BUCKET, key, id, 2, Buffer.from('x')), 612);
    expectError(await up.list(BUCKET, key, id), 612);
    expectError(await up.complete(BUCKET, key, id, { parts: [{ partNumber: 1, etag }] }), 612);
    expectError(await up.abort(BUCKET, key, id), 612);
    await expectAbsent(s, BUCKET, key);
  });
});

describe('complete', () => {
  const key = 'completed.bin';
  const p1 = seededBytes('c1', 4 * MiB);
  const p2 = seededBytes('c2', 3000);
  let id = '';
  let e1 = '';
  let e2 = '';

  beforeAll(async () => {
    id = await init(key);
    e1 = await part(key, id, 1, p1);
    e2 = await part(key, id, 2, p2);
  });

  it.each([
    { name: 'a wrong etag', body: () => ({ parts: [{ partNumber: 1, etag: e2 }, { partNumber: 2, etag: e2 }] }) },
    { name: 'parts out of order', body: () => ({ parts: [{ partNumber: 2, etag: e2 }, { partNumber: 1, etag: e1 }] }) },
    { name: 'a part listed twice', body: () => ({ parts: [{ partNumber: 1, etag: e1 }, { partNumber: 1, etag: e1 }] }) },
    { name: 'a part never uploaded', body: () => ({ parts: [{ partNumber: 1, etag: e1 }, { partNumber: 3, etag: e2 }] }) },
    { name: 'parts that is not an array', body: () => ({ parts: 'all' }) },
    { name: 'a part without an etag', body: () => ({ parts: [{ partNumber: 1 }] }) },
    { name: 'a body that is not JSON', body: () => '{"parts":[' },
    { name: 'an fname that is a number', body: () => ({ parts: [{ partNumber: 1, etag: e1 }], fname: 123 }) },
    { name: 'an fname that is an object', body: () => ({ parts: [{ partNumber: 1, etag: e1 }], fname: {} }) },
    { name: 'a mimeType that is an array', body: () => ({ parts: [{ partNumber: 1, etag: e1 }], mimeType: ['text/plain'] }) },
  ])('refuses $name with 400 and stores nothing', async ({ body }) => {
    expectError(await up.complete(BUCKET, key, id, body()), 400);
    await expectAbsent(s, BUCKET, key);
  });

  it('then completes with the right list, applying fname, mimeType, customVars and metadata', async () => {
    const token = s.uploadToken({
      scope: BUCKET,
      returnBody: '{"key":$(key),"hash":$(etag),"fname":$(fname),"fsize":$(fsize),"mime":$(mimeType),"a":$(x:a)}',
    });
    const r = await up.as(token).complete(BUCKET, key, id, {
      parts: [
        { partNumber: 1, etag: e1 },
        { partNumber: 2, etag: e2 },
      ],
      fname: 'orig 文件.bin',
      mimeType: 'application/x-completed',
      customVars: { 'x:a': '1' },
      metadata: { 'x-qn-meta-m': 'v' },
    });
    const whole = Buffer.concat([p1, p2]);
    expect(ok(r)).toEqual({ key, hash: qetag(whole), fname: 'orig 文件.bin', fsize: whole.length, mime: 'application/x-completed', a: '1' });
    const d = await expectStored(s, BUCKET, key, whole);
    expect(d.headers.get('content-type')).toBe('application/x-completed');
    expect(d.headers.get('x-qn-meta-m')).toBe('v');
  });

  it('`parts: []` makes a 0-byte object', async () => {
    const id0 = await init('empty.bin');
    expect(ok(await up.complete(BUCKET, 'empty.bin', id0, { parts: [] }))).toEqual({ key: 'empty.bin', hash: EMPTY_ETAG });
    await expectStored(s, BUCKET, 'empty.bin', Buffer.alloc(0));
  });

  it('joins only the listed parts (gaps allowed), frees the others, and uses the 0x9e etag for non-4 MiB parts', async () => {
    const k = 'subset.bin';
    const blobs = await countBlobs(s);
    const id3 = await init(k);
    const a = seededBytes('s1', MiB);
    const c = seededBytes('s3', 2 * MiB + 7);
    const ea = await part(k, id3, 1, a);
    await part(k, id3, 2, seededBytes('s2', 3 * MiB));
    const ec = await part(k, id3, 3, c);
    const r = ok<{ hash: string }>(await up.complete(BUCKET, k, id3, { parts: [{ partNumber: 1, etag: ea }, { partNumber: 3, etag: ec }] }));
    expect(r.hash).toBe(qetagV2([a, c]));
    expect(r.hash).toMatch(/^n/);
    await expectStored(s, BUCKET, k, Buffer.concat([a, c]));
    expect(await countBlobs(s)).toBe(blobs + 2); // the listed parts remain as the object's pieces, part 2 is freed
  });

  it('`~` (no key) stores under the hash', async () => {
    const data = seededBytes('nokey', 1234);
    const idn = await init(undefined);
    const e = await part(undefined, idn, 1, data);
    expect(ok(await up.complete(BUCKET, undefined, idn, { parts: [{ partNumber: 1, etag: e }] }))).toEqual({
      key: qetag(data),
      hash: qetag(data),
    });
    await expectStored(s, BUCKET, qetag(data), data);
  });
});
