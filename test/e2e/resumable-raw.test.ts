/**
 * Resumable upload v1 over raw HTTP (docs/development/kodo-protocol.md §5): the mkblk/bput answer shape (crc32 a JSON number = CRC-32 of
 * that request body, checksum = SHA-1 of the block so far, cumulative offset), the ctx rule (only the latest ctx
 * of a block with its offset is accepted: replayed, wrong-offset, other-block, altered, foreign-account and
 * expired ctxs → 701), mkfile validation (missing/incomplete blocks, sizes, non-4 MiB inner blocks → 400/701,
 * nothing visible before a good mkfile), mkfile path parameters, block size limits and UpToken checks.
 */
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import qiniu from 'qiniu';
import { createBucket as createOwnedBucket } from '../../src/buckets/buckets.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { rawRequest } from '../helpers/http.js';
import { seededBytes } from '../helpers/files.js';
import { RawUp, ok, upToken, type BlockJson } from '../helpers/resumable.js';
import { countBlobs } from '../helpers/rs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectAbsent, expectError, expectStored } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'resumable-raw';
/** Tokens outlive the 8-day clock jump of the expiry tests. */
const LONG = 30 * 86400;

let s: TestServer;
let up: RawUp;

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  up = new RawUp(s.url, s.uploadToken({ scope: BUCKET, expires: LONG }));
});
afterAll(async () => s?.stop());

const sha1b64 = (data: Buffer): string => createHash('sha1').update(data).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
const nowSec = (): number => Math.floor(s.clock.nowMs() / 1000);

/** Asserts a mkblk/bput answer for a block whose bytes so far are `soFar`, the last request body being `chunk`. */
function expectBlockAnswer(a: BlockJson, soFar: Buffer, chunk: Buffer): void {
  expect(a).toEqual({
    ctx: expect.stringMatching(/^[A-Za-z0-9_.~=-]+$/),
    checksum: sha1b64(soFar),
    crc32: crc32(chunk),
    offset: soFar.length,
    host: s.url,
    expired_at: expect.any(Number),
  });
  expect(typeof a.crc32).toBe('number');
  expect(a.expired_at).toBeGreaterThan(nowSec() + 6 * 86400);
  expect(a.expired_at).toBeLessThanOrEqual(nowSec() + 8 * 86400);
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** `ctx` with the character at `i` replaced by one whose 6-bit value differs in its top bit (never a no-op). */
function alter(ctx: string, i: number): string {
  const c = ctx[i] as string;
  const idx = B64.indexOf(c);
  const repl = idx >= 0 ? (B64[idx ^ 32] as string) : 'A';
  return ctx.slice(0, i) + repl + ctx.slice(i + 1);
}

describe('mkblk and bput', () => {
  const block = seededBytes('block-a', 4 * MiB);
  const chunk = (n: number): Buffer => block.subarray(n * MiB, (n + 1) * MiB);
  let ctx0 = '';
  let ctx1 = '';

  it('mkblk answers 200 JSON {ctx, checksum, crc32 (number), offset, host, expired_at}', async () => {
    const a = await up.mkblk(4 * MiB, chunk(0));
    expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    const j = ok<BlockJson>(a);
    expectBlockAnswer(j, chunk(0), chunk(0));
    ctx0 = j.ctx;
  });

  it('bput with the latest ctx and its offset answers 200, the offset cumulative, the checksum of the block so far', async () => {
    const j = ok<BlockJson>(await up.bput(ctx0, MiB, chunk(1)));
    expectBlockAnswer(j, block.subarray(0, 2 * MiB), chunk(1));
    expect(j.ctx).not.toBe(ctx0);
    ctx1 = j.ctx;
  });

  it('refuses with 701 an old (replayed) ctx, a wrong offset and a ctx of another block, storing nothing', async () => {
    const other = ok<BlockJson>(await up.mkblk(2 * MiB, seededBytes('block-b', MiB)));
    const blobs = await countBlobs(s);
    expectError(await up.bput(ctx0, MiB, chunk(1)), 701); // replay of the accepted chunk
    expectError(await up.bput(ctx0, 2 * MiB, chunk(2)), 701); // old ctx, current offset
    expectError(await up.bput(ctx1, MiB, chunk(2)), 701); // latest ctx, offset too small
    expectError(await up.bput(ctx1, 3 * MiB, chunk(2)), 701); // latest ctx, offset too large
    expectError(await up.bput(ctx1, 0, chunk(2)), 701);
    expectError(await up.bput(other.ctx, 2 * MiB, chunk(2)), 701); // another block's ctx with this block's offset
    expectError(await up.bput('not-a-ctx', 2 * MiB, chunk(2)), 701);
    expect(await countBlobs(s)).toBe(blobs);
    expect(await readdir(join(s.dataDir, 'tmp'))).toEqual([]);
  });

  it('refuses with 701 every one-character alteration of the latest ctx', async () => {
    const changed: number[] = [];
    for (let i = 0; i < ctx1.length; i++) {
      if (ctx1[i] === '.') continue;
      const a = await up.bput(alter(ctx1, i), 2 * MiB, chunk(2));
      if (a.status !== 701) changed.push(i);
    }
    expect(changed, `positions whose alteration was accepted in ${ctx1}`).toEqual([]);
  });

  it('refuses with 701 a ctx whose signature has a character added, or its spare last bits changed', async () => {
    const [body, sig] = ctx1.split('.') as [string, string];
    const spare = B64[B64.indexOf(sig[sig.length - 1] as string) ^ 1] as string; // 16 bytes: the last 4 bits are spare
    const variants = [`${ctx1}=`, `${ctx1}!`, `${ctx1}\u0000`, `${body}.!${sig}`, `${body}.${sig.slice(0, 5)}*${sig.slice(5)}`, `${body}.${sig.slice(0, -1)}${spare}`];
    for (const v of variants) expectError(await up.bput(encodeURIComponent(v), 2 * MiB, chunk(2)), 701);
    expectError(await up.mkfile(4 * MiB, [`${ctx1}\u0000`]), 701);
  });

  it('a ctx is bound to its access key: another account\'s token gets 701 with it', async () => {
    const pair = await s.running.g.keyIndex.create(0);
    const alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
    await createOwnedBucket(s.running.g, 'alice-bucket', pair.accessKey);
    const aliceUp = up.as(upToken({ scope: 'alice-bucket', expires: LONG }, alice));
    expectError(await aliceUp.bput(ctx1, 2 * MiB, chunk(2)), 701);
    expectError(await aliceUp.mkfile(4 * MiB, [ctx1]), 701);
  });

  it('after the refusals the block continues where it was; a complete block takes no more chunks', async () => {
    const j2 = ok<BlockJson>(await up.bput(ctx1, 2 * MiB, chunk(2)));
    const j3 = ok<BlockJson>(await up.bput(j2.ctx, 3 * MiB, chunk(3)));
    expectBlockAnswer(j3, block, chunk(3));
    expectError(await up.bput(j3.ctx, 4 * MiB, Buffer.from('x')), 400);
    const key = 'chunked-block.bin';
    expect(ok<{ key: string; hash: string }>(await up.mkfile(4 * MiB, [j3.ctx], { key }))).toEqual({ key, hash: qetag(block) });
    await expectStored(s, BUCKET, key, block);
  });
});

describe('mkfile', () => {
  const a = seededBytes('file-a', 4 * MiB);
  const b = seededBytes('file-b', 1000);
  const whole = Buffer.concat([a, b]);
  const KEY = 'joined.bin';
  let ctxA = '';
  let oldCtxA = '';
  let ctxB = '';
  let ctxIncomplete = '';
  let ctxShort = '';

  beforeAll(async () => {
    const first = ok<BlockJson>(await up.mkblk(4 * MiB, a.subarray(0, 3 * MiB)));
    oldCtxA = first.ctx;
    ctxA = ok<BlockJson>(await up.bput(first.ctx, 3 * MiB, a.subarray(3 * MiB))).ctx;
    ctxB = await up.block(b, 300);
    ctxIncomplete = ok<BlockJson>(await up.mkblk(4 * MiB, a.subarray(0, MiB))).ctx;
    ctxShort = await up.block(a.subarray(0, 2 * MiB));
  });

  it.each([
    { name: 'a missing block (sizes do not add up)', size: 4 * MiB + 1000, ctxs: () => [ctxA], status: 400 },
    { name: 'a missing block (empty ctx list)', size: 4 * MiB + 1000, ctxs: () => [], status: 400 },
    { name: 'sizes that do not add up (one byte more)', size: 4 * MiB + 1001, ctxs: () => [ctxA, ctxB], status: 400 },
    { name: 'sizes that do not add up (one byte less)', size: 4 * MiB + 999, ctxs: () => [ctxA, ctxB], status: 400 },
    { name: 'an incomplete block', size: 4 * MiB + 1000, ctxs: () => [ctxIncomplete, ctxB], status: 400 },
    { name: 'a non-last block that is not 4 MiB', size: 2 * MiB + 1000, ctxs: () => [ctxShort, ctxB], status: 400 },
    { name: 'a block listed twice', size: 8 * MiB + 1000, ctxs: () => [ctxA, ctxA, ctxB], status: 400 },
    { name: 'an old ctx of a block', size: 4 * MiB + 1000, ctxs: () => [oldCtxA, ctxB], status: 701 },
    { name: 'a ctx that is not one', size: 4 * MiB + 1000, ctxs: () => [ctxA, 'bogus'], status: 701 },
  ])('refuses $name ($status) and stores nothing', async ({ size, ctxs, status }) => {
    expectError(await up.mkfile(size, ctxs(), { key: KEY }), status);
    await expectAbsent(s, BUCKET, KEY);
  });

  it('succeeds with the right ctxs and applies key, fname, mimeType, x: variables and x-qn-meta- metadata', async () => {
    await expectAbsent(s, BUCKET, KEY);
    const token = s.uploadToken({
      scope: BUCKET,
      expires: LONG,
      returnBody: '{"key":$(key),"hash":$(etag),"fname":$(fname),"fsize":$(fsize),"mime":$(mimeType),"v":$(x:v)}',
    });
    const r = await up.as(token).mkfile(whole.length, [ctxA, ctxB], {
      key: KEY,
      fname: 'résumé 文件.bin',
      mimeType: 'application/x-joined',
      'x:v': 'value 值 1',
      'x-qn-meta-m': 'meta value',
    });
    expect(ok(r)).toEqual({
      key: KEY,
      hash: qetag(whole),
      fname: 'résumé 文件.bin',
      fsize: whole.length,
      mime: 'application/x-joined',
      v: 'value 值 1',
    });
    const d = await expectStored(s, BUCKET, KEY, whole);
    expect(d.headers.get('content-type')).toBe('application/x-joined');
    expect(d.headers.get('x-qn-meta-m')).toBe('meta value');
  });

  it('the blocks are consumed: the same ctxs cannot make a second file (701)', async () => {
    expectError(await up.mkfile(whole.length, [ctxA, ctxB], { key: 'again.bin' }), 701);
    await expectAbsent(s, BUCKET, 'again.bin');
  });

  it('mkfile/0 with an empty body makes a 0-byte object; without a key the key is the hash', async () => {
    const r = ok<{ key: string; hash: string }>(await up.mkfile(0, []));
    expect(r).toEqual({ key: qetag(Buffer.alloc(0)), hash: qetag(Buffer.alloc(0)) });
    await expectStored(s, BUCKET, r.key, Buffer.alloc(0));
  });
});

describe('limits and authentication', () => {
  it('mkblk refuses a block size above 4 MiB, zero with a body (an empty one is an empty block), a non-number, and a first chunk larger than the block (400)', async () => {
    expectError(await up.mkblk(4 * MiB + 1, Buffer.from('x')), 400);
    expectError(await up.mkblk(0, Buffer.from('x')), 400);
    expectError(await up.mkblk(Number.NaN, Buffer.from('x')), 400);
    expectError(await up.mkblk(10, Buffer.alloc(11)), 400);
    expect(await readdir(join(s.dataDir, 'tmp'))).toEqual([]);
  });

  it('bput refuses a chunk that overruns its block (400)', async () => {
    const j = ok<BlockJson>(await up.mkblk(10, Buffer.alloc(6)));
    expectError(await up.bput(j.ctx, 6, Buffer.alloc(5)), 400);
    expect(ok<BlockJson>(await up.bput(j.ctx, 6, Buffer.alloc(4))).offset).toBe(10);
  });

  it('mkfile refuses a Content-Length over the ctx-list limit (413) before the body arrives', { timeout: 15_000 }, async () => {
    const head = { authorization: `UpToken ${up.token ?? ''}`, 'content-length': String(64 * MiB) };
    for (const type of ['text/plain', 'application/octet-stream']) {
      const r = await rawRequest({ port: s.running.port, method: 'POST', path: '/mkfile/10', headers: { ...head, 'content-type': type }, body: 'a,b' });
      expect(r.status, r.body.toString()).toBe(413);
      expect(JSON.parse(r.body.toString())).toEqual({ error: expect.stringMatching(/Content-Length/) });
    }
  });

  it('answers 401 without an UpToken, with a bad signature, or with another scheme', async () => {
    const j = ok<BlockJson>(await up.mkblk(4, Buffer.from('abcd')));
    const none = up.as(undefined);
    expectError(await none.mkblk(4, Buffer.from('abcd')), 401);
    expectError(await none.bput(j.ctx, 4, Buffer.from('e')), 401);
    expectError(await none.mkfile(4, [j.ctx], { key: 'no-token' }), 401);
    const forged = up.token?.replace(/:[^:]+:/, ':AAAAAAAAAAAAAAAAAAAAAAAAAAA=:') ?? '';
    expectError(await up.as(forged).mkfile(4, [j.ctx], { key: 'no-token' }), 401);
    const qbox = await fetch(`${s.url}/mkblk/4`, { method: 'POST', headers: { authorization: `QBox ${up.token ?? ''}` }, body: 'abcd' });
    expect(qbox.status).toBe(401);
    await expectAbsent(s, BUCKET, 'no-token');
    // the ctx is still good with the right token
    expect(ok<{ key: string }>(await up.mkfile(4, [j.ctx], { key: 'no-token' })).key).toBe('no-token');
  });
});

describe('expiry (runs last: the clock jumps 8 days)', () => {
  it('a ctx past its expired_at is refused with 701 by bput and mkfile; nothing is stored', async () => {
    const content = seededBytes('expiring', 2 * MiB);
    const j = ok<BlockJson>(await up.mkblk(2 * MiB, content.subarray(0, MiB)));
    const done = ok<BlockJson>(await up.mkblk(MiB, content.subarray(MiB)));
    s.clock.advance(8 * 86400);
    expect(nowSec()).toBeGreaterThan(j.expired_at);
    expectError(await up.bput(j.ctx, MiB, content.subarray(MiB)), 701);
    expectError(await up.mkfile(MiB, [done.ctx], { key: 'expired.bin' }), 701);
    expect((await download(s, BUCKET, 'expired.bin')).status).toBe(404);
    // fresh blocks work again
    const fresh = ok<BlockJson>(await up.mkblk(MiB, content.subarray(MiB)));
    expect(ok<{ key: string }>(await up.mkfile(MiB, [fresh.ctx], { key: 'expired.bin' })).key).toBe('expired.bin');
  });
});
