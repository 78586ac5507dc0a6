/**
 * Encryption at rest over an S3 backend (GRANARY_BLOBS=s3://… on a real radosgw, test/helpers/s3-server.ts, and
 * GRANARY_MASTER_KEY_FILE): the backend's bucket holds only ciphertext — no plaintext of a known marker in any of its
 * objects — while Granary reads the objects back whole, by ranges across chunks and parts, and through a fop.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { put } from '../helpers/rs.js';
import { s3Client } from '../helpers/s3.js';
import { startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const BUCKET = 'sealed-s3';
const MiB = 1024 * 1024;
const MARKER = Buffer.from('S3-BACKEND-PLAINTEXT-9d1e');

function content(size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let at = 0; at < size; at += MARKER.length) MARKER.copy(b, at);
  for (let at = 0; at + 8 <= size; at += 4096) b.writeDoubleBE(at, at);
  return b;
}

let backend: S3TestServer;
let backendClient: S3Client;
let backendBucket: string;
let s: TestServer;
let keyFile: string;

beforeAll(async () => {
  backend = await startS3Server();
  backendClient = backend.client();
  backendBucket = await backend.createBucket();
  keyFile = join(tmpdir(), `granary-s3enc-${randomBytes(6).toString('hex')}.key`);
  await writeFile(keyFile, randomBytes(32).toString('hex'));
  s = await startTestServer({ ...backend.granaryEnv(backendBucket, 'g/'), GRANARY_S3_PART_SIZE: String(5 * MiB), GRANARY_MASTER_KEY_FILE: keyFile });
  await createBucket(s, BUCKET);
});

afterAll(async () => {
  await s?.stop();
  backendClient?.destroy();
  await backend?.stop();
  await rm(keyFile, { force: true });
});

describe('encryption at rest on an S3 backend', () => {
  it('stores only ciphertext in the backend bucket and reads everything back', async () => {
    const small = content(300 * 1024 + 5);
    const large = content(12 * MiB + 7);
    await put(s, BUCKET, 'small', small);
    const client = s3Client(s.s3Url!, AK, SK);
    const { Upload } = await import('@aws-sdk/lib-storage');
    await new Upload({ client, params: { Bucket: BUCKET, Key: 'large', Body: large, ServerSideEncryption: 'AES256' }, partSize: 5 * MiB }).done();
    const png = await sharp({ create: { width: 30, height: 20, channels: 3, background: { r: 9, g: 9, b: 9 } } }).png().toBuffer();
    await put(s, BUCKET, 'img.png', Buffer.concat([png]));

    const keys = ((await backendClient.send(new ListObjectsV2Command({ Bucket: backendBucket }))).Contents ?? []).map((o) => o.Key!);
    expect(keys.length).toBeGreaterThan(2);
    for (const key of keys) {
      const got = await backendClient.send(new GetObjectCommand({ Bucket: backendBucket, Key: key }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).includes(MARKER), key).toBe(false);
    }

    expect(Buffer.from(await (await fetch(`${s.url}/${BUCKET}/small`)).arrayBuffer()).equals(small)).toBe(true);
    const r = await fetch(`${s.url}/${BUCKET}/large`, { headers: { range: `bytes=${5 * MiB - 70000}-${5 * MiB + 70000}` } });
    expect(r.status).toBe(206);
    expect(Buffer.from(await r.arrayBuffer()).equals(large.subarray(5 * MiB - 70000, 5 * MiB + 70001))).toBe(true);
    expect(Buffer.from(await (await fetch(`${s.url}/${BUCKET}/large`)).arrayBuffer()).equals(large)).toBe(true);
    const info = await fetch(`${s.url}/${BUCKET}/img.png?imageInfo`);
    expect(await info.json()).toMatchObject({ width: 30, height: 20 });
  });
});
