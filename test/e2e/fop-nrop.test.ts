/**
 * The `nrop` moderation fop (docs/development/kodo-protocol.md §10.4) on the real nsfwjs model: the per-bucket switch (HTTP call,
 * v2/bucketInfo, authorisation), the full answer on real photos, bad sources, the worker thread (lazy start,
 * a dead worker replaced, downloads served while inference runs). The model loads once for the whole file.
 */
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModerationModel } from '../../src/fops/moderation-model.js';
import { NROP_REVIEW_THRESHOLD } from '../../src/fops/moderation-labels.js';
import { nowSeconds } from '../../src/ports/clock.js';
import { upload } from '../helpers/http.js';
import { expectJsonError, rawOp } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectStored, FIXTURE_IMAGES } from '../helpers/upload.js';

const BUCKET = 'nrop-photos';
const PHOTOS = ['Nikon_D70.jpg', 'hdr_canon_hdr_YES.jpg', 'Panasonic_DMC-FZ30.jpg', 'exif-org_canon-ixus.jpg'];

interface NropAnswer {
  code: number;
  message: string;
  nonce: string;
  timestamp: number;
  fileList: { rate: number; label: number; name: string; review: boolean }[];
  statistic: number[];
  reviewCount: number;
}

let s: TestServer;
let model: ModerationModel;

interface Got {
  status: number;
  headers: Headers;
  json: unknown;
}

async function nrop(key: string, bucket = BUCKET): Promise<Got> {
  const res = await fetch(`${s.url}/${bucket}/${encodeURIComponent(key)}?nrop`);
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: JSON.parse(text) as unknown };
}

async function bucketNrop(bucket = BUCKET): Promise<unknown> {
  const info = await sdk<{ nrop?: unknown }>(s.bucketManager().getBucketInfo(bucket));
  expect(info.status).toBe(200);
  return info.data.nrop;
}

/** Checks every field and type of a successful answer for `key`; returns it. */
function expectAnswer(got: Got, key: string): NropAnswer {
  expect(got.status, JSON.stringify(got.json)).toBe(200);
  expect(got.headers.get('content-type')).toMatch(/^application\/json/);
  expect(got.headers.get('cache-control')).toBe('no-store');
  const a = got.json as NropAnswer;
  expect(Object.keys(a).sort()).toEqual(['code', 'fileList', 'message', 'nonce', 'reviewCount', 'statistic', 'timestamp']);
  expect(a.code).toBe(0);
  expect(a.message).toBe('success');
  expect(a.nonce).toMatch(/^[0-9a-f]{16}$/);
  expect(Number.isInteger(a.timestamp)).toBe(true);
  expect(a.fileList).toHaveLength(1);
  const [file] = a.fileList;
  expect(Object.keys(file ?? {}).sort()).toEqual(['label', 'name', 'rate', 'review']);
  expect(file?.name).toBe(key);
  expect([0, 1, 2]).toContain(file?.label);
  expect(typeof file?.rate).toBe('number');
  expect(file?.rate).toBeGreaterThanOrEqual(0);
  expect(file?.rate).toBeLessThanOrEqual(1);
  expect(file?.review).toBe((file?.rate ?? 0) < NROP_REVIEW_THRESHOLD);
  const statistic = [0, 0, 0];
  statistic[file?.label ?? 0] = 1;
  expect(a.statistic).toEqual(statistic);
  expect(a.reviewCount).toBe(file?.review ? 1 : 0);
  return a;
}

beforeAll(async () => {
  s = await startTestServer();
  model = s.running.g.moderation as ModerationModel;
  await createBucket(s, BUCKET);
  for (const name of PHOTOS) await upload(s, BUCKET, `photos/${name}`, await readFile(join(FIXTURE_IMAGES, name)));
});
afterAll(async () => s?.stop());

describe('the nrop switch of a bucket', () => {
  it('is off by default: nrop answers 403 naming both ways to enable it, and no model is loaded', async () => {
    expect(await bucketNrop()).toBe(false);
    const got = await nrop(`photos/${PHOTOS[0]}`);
    expect(got.status).toBe(403);
    const { error } = got.json as { error: string };
    expect(error).toContain(`nrop is not enabled for bucket ${BUCKET}`);
    expect(error).toContain(`POST /nrop/${BUCKET}/enable/1`);
    expect(error).toContain(`granary bucket nrop ${BUCKET} on`);
    expect(model.starts).toBe(0);
  });

  it("cannot be switched by another account's key (403), without a signature (401), nor for an unknown bucket (631)", async () => {
    const pair = await s.running.g.keyIndex.create(0);
    const other = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
    expectJsonError(await rawOp(s, `/nrop/${BUCKET}/enable/1`, { mac: other }), 403);
    const unsigned = await fetch(`${s.url}/nrop/${BUCKET}/enable/1`, { method: 'POST' });
    expect(unsigned.status).toBe(401);
    expectJsonError(await rawOp(s, '/nrop/no-such-bucket/enable/1'), 631);
    expect(await bucketNrop()).toBe(false);
  });

  it('refuses a value other than 0 or 1 (400)', async () => {
    for (const bad of ['2', 'on', 'true']) expectJsonError(await rawOp(s, `/nrop/${BUCKET}/enable/${bad}`), 400);
    expect(await bucketNrop()).toBe(false);
  });

  it('is switched on by POST /nrop/<bucket>/enable/1 (200 {}, QBox or Qiniu credential) and shown in v2/bucketInfo', async () => {
    const on = await rawOp(s, `/nrop/${BUCKET}/enable/1`, { scheme: 'QBox' });
    expect(on.status, on.text).toBe(200);
    expect(on.json).toEqual({});
    expect(await bucketNrop()).toBe(true);
    const again = await rawOp(s, `/nrop/${BUCKET}/enable/1`);
    expect(again.status).toBe(200);
    expect(await bucketNrop()).toBe(true);
  });
});

describe('nrop on an enabled bucket', () => {
  it('labels real photos normal (2) with the full answer, the key as name and the server clock as timestamp', async () => {
    s.clock.advance(3600);
    const nonces = new Set<string>();
    for (const name of PHOTOS) {
      const before = nowSeconds(s.clock);
      const a = expectAnswer(await nrop(`photos/${name}`), `photos/${name}`);
      expect(a.fileList[0]?.label, name).toBe(2);
      expect(a.fileList[0]?.review, name).toBe(false);
      expect(a.fileList[0]?.rate, name).toBeGreaterThan(0.9);
      expect(a.timestamp).toBeGreaterThanOrEqual(before);
      expect(a.timestamp).toBeLessThanOrEqual(nowSeconds(s.clock));
      nonces.add(a.nonce);
    }
    expect(nonces.size).toBe(PHOTOS.length);
    expect(model.starts).toBe(1);
    s.clock.advance(-3600); // back within the signed-date window of management calls
  });

  it('answers for grey, transparent and rotated images too (any channel layout reaches the model as RGB)', async () => {
    const grey = await sharp(join(FIXTURE_IMAGES, 'Nikon_D70.jpg')).greyscale().png().toBuffer();
    const rgba = await sharp(join(FIXTURE_IMAGES, 'Nikon_D70.jpg')).ensureAlpha(0.5).webp().toBuffer();
    await upload(s, BUCKET, 'grey key.png', grey);
    await upload(s, BUCKET, 'alpha.webp', rgba);
    await upload(s, BUCKET, 'rotated.jpg', await readFile(join(FIXTURE_IMAGES, 'orientation_landscape_6.jpg')));
    for (const key of ['grey key.png', 'alpha.webp', 'rotated.jpg']) expectAnswer(await nrop(key), key);
  });

  it('refuses sources that are not images (415) or cannot be decoded (4xx), and keeps serving', async () => {
    await upload(s, BUCKET, 'notes.txt', 'plain text, not an image');
    const text = await nrop('notes.txt');
    expect(text.status).toBe(415);
    expect(text.json).toEqual({ error: expect.stringContaining('nrop') });
    await upload(s, BUCKET, 'broken.jpg', await readFile(join(FIXTURE_IMAGES, 'corrupted.jpg')));
    const broken = await nrop('broken.jpg');
    expect(broken.status).toBeGreaterThanOrEqual(400);
    expect(broken.status).toBeLessThan(500);
    expect(broken.json).toEqual({ error: expect.any(String) });
    expect(await nrop('missing.jpg')).toMatchObject({ status: 404 });
    expect((await nrop(`photos/${PHOTOS[1]}`)).status).toBe(200);
  });

  it('refuses parameters (400)', async () => {
    const res = await fetch(`${s.url}/${BUCKET}/photos/${PHOTOS[0]}?nrop/v/2`);
    expect(res.status).toBe(400);
  });

  it('keeps serving downloads while 4 nrops are in flight', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 7);
    await upload(s, BUCKET, 'big.bin', big);
    let finished = 0;
    const dispatched = once(model, 'dispatch');
    const runs = PHOTOS.map((name) =>
      nrop(`photos/${name}`).then((got) => {
        finished++;
        return got;
      }),
    );
    await dispatched;
    await expectStored(s, BUCKET, 'big.bin', big);
    expect(finished).toBeLessThan(PHOTOS.length);
    for (const [i, got] of (await Promise.all(runs)).entries()) expect(expectAnswer(got, `photos/${PHOTOS[i]}`).fileList[0]?.label).toBe(2);
  });

  it('answers 599 for the request in flight when the worker dies, and the next request starts a new worker', async () => {
    const starts = model.starts;
    const dispatched = once(model, 'dispatch');
    const inFlight = nrop(`photos/${PHOTOS[0]}`);
    await dispatched;
    await model.terminateWorker('the moderation worker crashed (test)');
    const failed = await inFlight;
    expect(failed.status).toBe(599);
    expect(failed.json).toEqual({ error: expect.stringContaining('moderation') });
    expectAnswer(await nrop(`photos/${PHOTOS[1]}`), `photos/${PHOTOS[1]}`);
    expect(model.starts).toBe(starts + 1);
  });

  it('is refused again (403) once switched off with POST /nrop/<bucket>/enable/0', async () => {
    const off = await rawOp(s, `/nrop/${BUCKET}/enable/0`);
    expect(off.status).toBe(200);
    expect(off.json).toEqual({});
    expect(await bucketNrop()).toBe(false);
    const got = await nrop(`photos/${PHOTOS[0]}`);
    expect(got.status).toBe(403);
    expect((got.json as { error: string }).error).toContain('nrop is not enabled');
  });

  it('ends the worker at server shutdown; the model then refuses work (599)', async () => {
    expect((await rawOp(s, `/nrop/${BUCKET}/enable/1`)).status).toBe(200);
    expectAnswer(await nrop(`photos/${PHOTOS[2]}`), `photos/${PHOTOS[2]}`);
    expect(model.hasWorker).toBe(true);
    await s.running.close();
    expect(model.hasWorker).toBe(false);
    await expect(model.classify(Buffer.alloc(224 * 224 * 3), new AbortController().signal)).rejects.toMatchObject({ status: 599 });
  });
});
