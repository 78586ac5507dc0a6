/**
 * The BlobStore contract on S3 (S3BlobStore) against a real radosgw started here (test/helpers/s3-server.ts), plus
 * what only the S3 store has: its local-copy cache bound, the 599 mapping of S3 failures, and a prefix.
 */
import { ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageError } from '../../src/errors.js';
import { S3BlobStore, type S3BlobStoreOptions } from '../../src/store/s3/s3-blob-store.js';
import { MIN_PART_BYTES } from '../../src/store/s3/s3-staged-blob.js';
import { startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { blobStoreContract, collect, putBlob } from './blob-store.contract.js';

let server: S3TestServer;
let client: S3Client;
let scratch: string;

beforeAll(async () => {
  server = await startS3Server();
  client = server.client();
  scratch = await mkdtemp(join(tmpdir(), 'granary-s3-cache-'));
});
afterAll(async () => {
  client?.destroy();
  await server?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A store on `bucket`/`prefix` with the smallest part size S3 allows and its own cache dir. */
async function s3Store(bucket: string, prefix: string, opts: Partial<S3BlobStoreOptions> = {}): Promise<S3BlobStore> {
  const location = { bucket, prefix, endpoint: server.endpoint, region: server.region, forcePathStyle: true };
  const credentials = { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
  return new S3BlobStore(
    { ...location, credentials },
    {
      cacheDir: await mkdtemp(join(scratch, 'c-')),
      cacheBytes: 64 * 1024 * 1024,
      partBytes: MIN_PART_BYTES,
      staleUploadMs: 0,
      ...opts,
    },
  );
}

async function uploadsUnder(bucket: string, prefix: string): Promise<number> {
  const res = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
  return res.Uploads?.length ?? 0;
}

blobStoreContract('S3 (S3BlobStore on Ceph radosgw)', async () => {
  const bucket = await server.createBucket();
  return {
    open: () => s3Store(bucket, 'blobs/'),
    stagingLeftovers: () => uploadsUnder(bucket, 'blobs/'),
    partBytes: MIN_PART_BYTES,
    close: async () => undefined,
  };
});

describe('S3BlobStore beyond the contract', () => {
  it('keeps blobs under its prefix only, and lists only its own ids', async () => {
    const bucket = await server.createBucket();
    const a = await s3Store(bucket, 'node/a/');
    const b = await s3Store(bucket, '');
    const id = await putBlob(a, Buffer.from('under a prefix'));
    const keys = (await client.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents?.map((o) => o.Key);
    expect(keys).toEqual([`node/a/${id}`]);
    const ids: string[] = [];
    for await (const blob of b.list()) ids.push(blob.id);
    expect(ids).toEqual([]);
    await Promise.all([a.close(), b.close()]);
  });

  it('bounds its local copies by bytes, least recently used out, pinned copies kept', async () => {
    const bucket = await server.createBucket();
    const store = await s3Store(bucket, '', { cacheBytes: 1_000_000 });
    const cacheDir = (store as unknown as { opts: S3BlobStoreOptions }).opts.cacheDir;
    await store.recover();
    const blobs = await Promise.all([0, 1, 2].map(() => randomBytes(400_000)).map(async (bytes) => ({ bytes, id: await putBlob(store, bytes) })));
    const files = async (): Promise<string[]> => (await readdir(cacheDir)).sort();
    const pinned = await store.localFile(blobs[0]!.id);
    for (const { id } of blobs.slice(1)) {
      const copy = await store.localFile(id);
      await copy.release();
    }
    // 3 × 400 kB > 1 MB: the least recently used unpinned copy (blob 1) went; pinned blob 0 stayed.
    expect(await files()).toHaveLength(2);
    expect(await readFile(pinned.path)).toEqual(blobs[0]!.bytes);
    await pinned.release();
    await store.remove(blobs[0]!.id);
    expect(await files()).toHaveLength(1);
    await store.close();
  });

  it('fails with a 599 storage error when the bucket is missing, at start and on upload', async () => {
    const store = await s3Store('granary-no-such-bucket', '');
    const atStart = await store.recover().then(() => undefined, (err: unknown) => err);
    expect((atStart as { code?: string }).code).toBe('S3_NoSuchBucket');
    expect(storageError(atStart)?.status).toBe(599);
    const onUpload = await putBlob(store, Buffer.from('x')).then(() => undefined, (err: unknown) => err);
    expect((onUpload as { code?: string }).code).toBe('S3_NoSuchBucket');
    expect(storageError(onUpload, 'staging the upload')?.message).toBe(
      'the object store (S3) failed or did not answer: staging the upload (S3_NoSuchBucket)',
    );
    const onRead = await collect(store.read(randomBytes(16).toString('hex'))).then(() => undefined, (err: unknown) => err);
    expect((onRead as { code?: string }).code).toBe('S3_NoSuchBucket');
    await store.close();
  });

  it('fails a multipart upload in the sink when S3 refuses it, and discard leaves nothing', async () => {
    const bucket = await server.createBucket();
    const wrong = new S3BlobStore(
      { bucket, prefix: '', endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: { accessKeyId: server.accessKeyId, secretAccessKey: 'wrong' } },
      { cacheDir: join(scratch, 'wrong'), cacheBytes: 0, partBytes: MIN_PART_BYTES, staleUploadMs: 0 },
    );
    const err = await putBlob(wrong, randomBytes(MIN_PART_BYTES + 10)).then(() => undefined, (e: unknown) => e);
    expect((err as { code?: string }).code).toMatch(/^S3_(SignatureDoesNotMatch|AccessDenied|InvalidAccessKeyId)$/);
    expect(storageError(err)?.status).toBe(599);
    expect(await uploadsUnder(bucket, '')).toBe(0);
    await wrong.close();
  });
});
