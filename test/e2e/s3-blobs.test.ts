/**
 * Granary with GRANARY_BLOBS=s3://… end to end: a real radosgw (test/helpers/s3-server.ts) holds the bytes, SQLite
 * the metadata. Driven with the official SDK: form upload, resumable v2 upload (parts as piece blobs, the object
 * assembled by a multipart upload), downloads with Range, copy, delete (the blob leaves the bucket), imageInfo,
 * and avinfo (ffprobe reads a local copy: localFile through the cache).
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InlineAwareBlobStore } from '../../src/store/inline-blob-store.js';
import { S3BlobStore } from '../../src/store/s3/s3-blob-store.js';
import { seededBytes } from '../helpers/files.js';
import { startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES, waitUntil } from '../helpers/upload.js';

const BUCKET = 'clustered';
const PREFIX = 'granary/';
const MiB = 1024 * 1024;
const VIDEO = join(FIXTURE_IMAGES, '..', 'video', 'big_buck_bunny.mp4');

let s3: S3TestServer;
let s: TestServer;
let client: S3Client;
let s3Bucket: string;
let dir: string;

beforeAll(async () => {
  s3 = await startS3Server();
  client = s3.client();
  s3Bucket = await s3.createBucket();
  s = await startTestServer({ ...s3.granaryEnv(s3Bucket, PREFIX), GRANARY_S3_PART_SIZE: String(5 * MiB) });
  await createBucket(s, BUCKET);
  dir = await mkdtemp(join(tmpdir(), 'granary-s3-e2e-'));
});
afterAll(async () => {
  await s?.stop();
  client?.destroy();
  await s3?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Keys of the objects in the S3 bucket now. */
async function s3Keys(): Promise<string[]> {
  const res = await client.send(new ListObjectsV2Command({ Bucket: s3Bucket }));
  return (res.Contents ?? []).map((o) => o.Key ?? '');
}

/** The blob id the metadata holds for `key`. */
async function blobOf(key: string): Promise<string> {
  const { object } = await s.running.g.meta.getBucketAndObject(BUCKET, key);
  if (!object) throw new Error(`${key} is missing`);
  return object.blobId;
}

async function get(key: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(`${s.url}/${BUCKET}/${key}`, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

const formUploader = (): qiniu.form_up.FormUploader => new qiniu.form_up.FormUploader(s.zoneConfig());
const token = (): string => s.uploadToken({ scope: BUCKET });

describe('Granary on S3 blobs (radosgw)', () => {
  it('runs on the S3 BlobStore', () => {
    expect((s.running.g.blobs as InlineAwareBlobStore).files).toBeInstanceOf(S3BlobStore);
  });

  it('form upload: the bytes land in the bucket under the prefix, download and Range read them back', async () => {
    const content = seededBytes('form', 100_000);
    const r = await sdk<{ key: string }>(formUploader().put(token(), 'form.bin', content, new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
    expect(await s3Keys()).toContain(`${PREFIX}${await blobOf('form.bin')}`);
    const whole = await get('form.bin');
    expect(whole.status).toBe(200);
    expect(whole.body.equals(content)).toBe(true);
    const part = await get('form.bin', { Range: 'bytes=1000-1999' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${content.length}`);
    expect(part.body.equals(content.subarray(1000, 2000))).toBe(true);
  });

  it('resumable v2 upload of 11 MiB in 4 MiB parts: assembled intact, ranges across S3 part boundaries', async () => {
    const content = seededBytes('resumable', 11 * MiB + 7);
    const path = join(dir, 'big.bin');
    await writeFile(path, content);
    const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, 4 * MiB, 'v2');
    const r = await sdk(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token(), 'big.bin', path, extra));
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    const whole = await get('big.bin');
    expect(createHash('sha1').update(whole.body).digest('hex')).toBe(createHash('sha1').update(content).digest('hex'));
    const start = 5 * MiB - 10;
    const part = await get('big.bin', { Range: `bytes=${start}-${start + 2 * MiB}` });
    expect(part.status).toBe(206);
    expect(part.body.equals(content.subarray(start, start + 2 * MiB + 1))).toBe(true);
  });

  it('copy, then delete both: the copy outlives the source and the blob leaves the bucket at the end', async () => {
    const content = seededBytes('copy', 5000);
    await sdk(formUploader().put(token(), 'src.bin', content, new qiniu.form_up.PutExtra()));
    const key = `${PREFIX}${await blobOf('src.bin')}`;
    const bm = s.bucketManager();
    expect((await sdk(bm.copy(BUCKET, 'src.bin', BUCKET, 'copy.bin', {}))).status).toBe(200);
    expect((await sdk(bm.delete(BUCKET, 'src.bin'))).status).toBe(200);
    expect((await get('src.bin')).status).toBe(404);
    const copy = await get('copy.bin');
    expect(copy.status).toBe(200);
    expect(copy.body.equals(content)).toBe(true);
    expect((await sdk(bm.delete(BUCKET, 'copy.bin'))).status).toBe(200);
    expect((await get('copy.bin')).status).toBe(404);
    await waitUntil(async () => !(await s3Keys()).includes(key), `${key} is deleted from S3`, 10_000);
  });

  it('imageInfo reads the image from S3', async () => {
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 0, g: 128, b: 255 } } }).png().toBuffer();
    await sdk(formUploader().put(token(), 'pic.png', png, new qiniu.form_up.PutExtra()));
    const r = await get('pic.png?imageInfo');
    expect(r.status, r.body.toString()).toBe(200);
    expect(JSON.parse(r.body.toString())).toMatchObject({ format: 'png', width: 64, height: 48 });
  });

  it('avinfo runs ffprobe on a local copy of the S3 blob', async () => {
    await sdk(formUploader().put(token(), 'bunny.mp4', await readFile(VIDEO), new qiniu.form_up.PutExtra()));
    const r = await get('bunny.mp4?avinfo');
    expect(r.status, r.body.toString()).toBe(200);
    const info = JSON.parse(r.body.toString()) as { format: { size: string }; streams: unknown[] };
    expect(Number(info.format.size)).toBe((await readFile(VIDEO)).length);
    expect(info.streams.length).toBeGreaterThan(0);
  });
});
