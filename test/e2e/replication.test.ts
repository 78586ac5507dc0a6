/**
 * Bucket replication between two Granary servers (docs/guides/replication.md): a rule added with the
 * CLI (`granary replication add --existing`) on the source, the destination's S3 API as its target. A few hundred
 * objects — puts, overwrites, deletes, metadata changes through S3 and Kodo, a 9 MiB multipart upload, non-ASCII
 * keys, objects that existed before the rule — converge byte for byte and metadata for metadata; the destination
 * stopped while changes arrive, then started again: they converge; a wrong destination secret shows FAILED with
 * the destination's own error; a rule into its own bucket is refused.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketReplicationCommand,
  DeleteObjectCommand,
  GetBucketReplicationCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketReplicationCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cleanEnv, freePort, REPO_ROOT, runAsync } from '../helpers/cli.js';
import { scrape, total } from '../helpers/metrics.js';
import { until } from '../helpers/queue-fixtures.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';

let src: TestServer;
let dst: TestServer;
let srcS3: S3Client;
let dstS3: S3Client;
let srcDir: string;
let dstDir: string;
let srcEnv: Record<string, string>;
let dstEnv: Record<string, string>;

const FAST = {
  GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32',
  GRANARY_REPLICATION_RETRY_MS: '50',
  GRANARY_REPLICATION_MAX_RETRY_MS: '400',
  GRANARY_REPLICATION_FAIL_AFTER: '2',
  GRANARY_REPLICATION_MULTIPART_BYTES: String(5 * 1024 * 1024),
};

/** `granary <args>` against the source's data dir (an offline command next to the running server). */
async function cli(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return runAsync(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env: cleanEnv(srcEnv) });
}

async function startDst(): Promise<void> {
  dst = await startTestServer(dstEnv);
  dstS3 = s3Client(dst.s3Url!, AK, SK);
}

async function body(c: S3Client, bucket: string, key: string): Promise<{ bytes: Buffer; type?: string; meta: Record<string, string>; cache?: string }> {
  const r = await c.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return {
    bytes: Buffer.from(await r.Body!.transformToByteArray()),
    ...(r.ContentType ? { type: r.ContentType } : {}),
    meta: r.Metadata ?? {},
    ...(r.CacheControl ? { cache: r.CacheControl } : {}),
  };
}

async function keysOf(c: S3Client, bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await c.send(new ListObjectsV2Command({ Bucket: bucket, ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of page.Contents ?? []) keys.push(o.Key!);
    token = page.NextContinuationToken;
  } while (token);
  return keys;
}

/** Waits until the source has nothing pending for replication. */
async function drained(timeoutMs = 25_000): Promise<void> {
  await until(async () => total(await scrape(src), 'granary_replication_pending_objects') === 0, 'replication drained', timeoutMs);
}

/** Source and destination hold the same keys with the same bytes, types and metadata. */
async function expectConverged(bucket: string, destBucket: string): Promise<number> {
  const [a, b] = [await keysOf(srcS3, bucket), await keysOf(dstS3, destBucket)];
  expect(b).toEqual(a);
  for (const key of a) {
    const [x, y] = [await body(srcS3, bucket, key), await body(dstS3, destBucket, key)];
    expect(y.bytes.equals(x.bytes), key).toBe(true);
    expect({ type: y.type, meta: y.meta, cache: y.cache }, key).toEqual({ type: x.type, meta: x.meta, cache: x.cache });
  }
  return a.length;
}

beforeAll(async () => {
  srcDir = await mkdtemp(join(tmpdir(), 'granary-repl-src-'));
  dstDir = await mkdtemp(join(tmpdir(), 'granary-repl-dst-'));
  srcEnv = {
    GRANARY_DATA_DIR: srcDir,
    GRANARY_ACCESS_KEY: AK,
    GRANARY_SECRET_KEY: SK,
    GRANARY_PORT: String(await freePort()),
    GRANARY_S3_PORT: String(await freePort()),
    ...FAST,
  };
  dstEnv = { GRANARY_DATA_DIR: dstDir, GRANARY_PORT: String(await freePort()), GRANARY_S3_PORT: String(await freePort()) };
  src = await startTestServer(srcEnv);
  srcS3 = s3Client(src.s3Url!, AK, SK);
  await startDst();
  for (const b of ['src', 'src2']) await srcS3.send(new CreateBucketCommand({ Bucket: b }));
  for (const b of ['dst', 'dst2']) await dstS3.send(new CreateBucketCommand({ Bucket: b }));
});

afterAll(async () => {
  await src?.stop();
  await dst?.stop();
  await rm(srcDir, { recursive: true, force: true });
  await rm(dstDir, { recursive: true, force: true });
});

describe('bucket replication to another Granary', () => {
  it('refuses a rule into its own bucket, and a loopback endpoint unless allowed', async () => {
    const self = await cli('replication', 'add', 'src', '--endpoint', src.s3Url!, '--target-bucket', 'src', '--dest-access-key', AK, '--dest-secret-key', SK);
    expect(self.status).not.toBe(0);
    expect(self.stderr).toMatch(/cannot replicate into itself/);
    const guarded = await runAsync(process.execPath, [BIN, 'replication', 'add', 'src', '--endpoint', dst.s3Url!, '--target-bucket', 'dst', '--dest-access-key', AK, '--dest-secret-key', SK], {
      cwd: REPO_ROOT,
      env: cleanEnv({ ...srcEnv, GRANARY_OUTBOUND_ALLOW: '' }),
    });
    expect(guarded.status).not.toBe(0);
    expect(guarded.stderr).toMatch(/GRANARY_OUTBOUND_ALLOW/);
  });

  it('converges a few hundred changes byte for byte and metadata for metadata', async () => {
    // Objects that exist before the rule: copied by the initial sync.
    for (let i = 0; i < 20; i++) await srcS3.send(new PutObjectCommand({ Bucket: 'src', Key: `old/${i}`, Body: `old ${i}` }));
    const add = await cli('replication', 'add', 'src', '--id', 'dr', '--endpoint', dst.s3Url!, '--target-bucket', 'dst', '--dest-access-key', AK, '--dest-secret-key', SK, '--existing');
    expect(add.stderr).toBe('');
    expect(add.stdout).toMatch(/added replication rule dr of bucket src: target arn:granary:replication::[\w-]+:dst/);
    expect(add.stdout).toMatch(/initial sync: 20 objects queued/);
    const ls = await cli('replication', 'ls', 'src', '--json');
    expect(ls.stdout).not.toContain(SK);
    expect(JSON.parse(ls.stdout)).toMatchObject([{ bucket: 'src', id: 'dr', deletes: true, destination: { bucket: 'dst', endpoint: dst.s3Url } }]);

    const keys = ['données/été-€.txt', '日本語/ファイル.bin', 'emoji 😀 +%.txt', 'a/b/c?d#e'];
    for (let i = 0; i < 200; i++) keys.push(`obj/${String(i).padStart(3, '0')}`);
    for (const [i, key] of keys.entries()) {
      await srcS3.send(
        new PutObjectCommand({
          Bucket: 'src',
          Key: key,
          Body: Buffer.alloc(100 + (i % 7) * 1000, i % 251),
          ContentType: i % 3 === 0 ? 'text/plain' : 'application/x-test',
          Metadata: { n: String(i), who: 'source' },
          ...(i % 5 === 0 ? { CacheControl: 'max-age=60' } : {}),
        }),
      );
    }
    // Overwrites, deletes, metadata changes (S3 copy in place, Kodo chgm).
    for (let i = 0; i < 30; i++) await srcS3.send(new PutObjectCommand({ Bucket: 'src', Key: `obj/${String(i).padStart(3, '0')}`, Body: `second version ${i}` }));
    for (let i = 30; i < 60; i++) await srcS3.send(new DeleteObjectCommand({ Bucket: 'src', Key: `obj/${String(i).padStart(3, '0')}` }));
    for (let i = 60; i < 80; i++) {
      const key = `obj/${String(i).padStart(3, '0')}`;
      await srcS3.send(
        new CopyObjectCommand({ Bucket: 'src', Key: key, CopySource: `src/${key}`, MetadataDirective: 'REPLACE', Metadata: { changed: 'yes' }, ContentType: 'image/x-changed' }),
      );
    }
    const bm = src.bucketManager();
    for (let i = 80; i < 90; i++) {
      const r = await sdk(bm.changeMime('src', `obj/${String(i).padStart(3, '0')}`, 'text/x-kodo-chgm'));
      expect(r.status).toBe(200);
    }
    // A 9 MiB multipart upload (two parts at the source; two 8 MiB-part pieces at the destination).
    const { UploadId } = await srcS3.send(new CreateMultipartUploadCommand({ Bucket: 'src', Key: 'big/multipart.bin', ContentType: 'application/x-big' }));
    const parts = [Buffer.alloc(5 * 1024 * 1024, 1), Buffer.alloc(4 * 1024 * 1024, 2)];
    const etags: string[] = [];
    for (const [n, p] of parts.entries()) {
      etags.push((await srcS3.send(new UploadPartCommand({ Bucket: 'src', Key: 'big/multipart.bin', UploadId, PartNumber: n + 1, Body: p }))).ETag!);
    }
    await srcS3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'src',
        Key: 'big/multipart.bin',
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, n) => ({ ETag, PartNumber: n + 1 })) },
      }),
    );

    await drained();
    const n = await expectConverged('src', 'dst');
    expect(n).toBe(20 + keys.length - 30 + 1);
    const head = await srcS3.send(new HeadObjectCommand({ Bucket: 'src', Key: 'big/multipart.bin' }));
    expect(head.ReplicationStatus).toBe('COMPLETED');
    const stat = await sdk<{ replicationStatus?: string }>(bm.stat('src', 'obj/000'));
    expect(stat.data.replicationStatus).toBe('COMPLETED');
    const status = await cli('replication', 'status', 'src', '--json');
    expect(JSON.parse(status.stdout)).toMatchObject([{ bucket: 'src', rule: 'dr', pending: 0, failed: 0 }]);
  });

  it('queues changes while the destination is down and converges once it is back', async () => {
    await dst.stop();
    for (let i = 0; i < 30; i++) await srcS3.send(new PutObjectCommand({ Bucket: 'src', Key: `while-down/${i}`, Body: `written while the destination was down ${i}` }));
    for (let i = 90; i < 100; i++) await srcS3.send(new DeleteObjectCommand({ Bucket: 'src', Key: `obj/${String(i).padStart(3, '0')}` }));
    await until(async () => total(await scrape(src), 'granary_replication_attempts_total', { outcome: 'failed' }) > 0, 'a failed attempt');
    const pending = await scrape(src);
    expect(total(pending, 'granary_replication_pending_objects', { bucket: 'src', rule: 'dr' })).toBeGreaterThan(0);
    await startDst();
    await drained();
    await expectConverged('src', 'dst');
  });

  it('shows FAILED with the destination\'s error when its secret is wrong', async () => {
    const add = await cli('replication', 'add', 'src2', '--id', 'bad', '--endpoint', dst.s3Url!, '--target-bucket', 'dst2', '--dest-access-key', AK, '--dest-secret-key', 'not-the-secret');
    expect(add.status).toBe(0);
    await srcS3.send(new PutObjectCommand({ Bucket: 'src2', Key: 'k', Body: 'x' }));
    await until(async () => (await srcS3.send(new HeadObjectCommand({ Bucket: 'src2', Key: 'k' }))).ReplicationStatus === 'FAILED', 'FAILED status');
    const status = await cli('replication', 'status', 'src2', '--json');
    expect(status.stdout).not.toContain('not-the-secret');
    const [rule] = JSON.parse(status.stdout) as Array<{ failed: number; lastError: string }>;
    expect(rule!.failed).toBe(1);
    expect(rule!.lastError).toMatch(/SignatureDoesNotMatch/);
    const one = await cli('replication', 'status', 'src2', '--key', 'k', '--json');
    expect(JSON.parse(one.stdout)).toMatchObject([{ rule: 'bad', status: 'FAILED' }]);
    // Removing the rule drops its queue: nothing is left pending.
    expect((await cli('replication', 'rm', 'src2', 'bad')).status).toBe(0);
    expect(total(await scrape(src), 'granary_replication_pending_objects', { bucket: 'src2' })).toBe(0);
  });

  it('maps S3 Put/Get/DeleteBucketReplication onto the rules, refusing what it cannot honour', async () => {
    const [listed] = JSON.parse((await cli('replication', 'ls', 'src', '--json')).stdout) as Array<{ destination: { arn: string } }>;
    const arn = listed!.destination.arn;
    const got = await srcS3.send(new GetBucketReplicationCommand({ Bucket: 'src' }));
    expect(got.ReplicationConfiguration?.Rules).toMatchObject([
      { ID: 'dr', Status: 'Enabled', Filter: { Prefix: '' }, DeleteMarkerReplication: { Status: 'Enabled' }, Destination: { Bucket: arn } },
    ]);
    const put = (rule: Record<string, unknown>): Promise<unknown> =>
      srcS3.send(new PutBucketReplicationCommand({ Bucket: 'src', ReplicationConfiguration: { Role: 'arn:aws:iam::1:role/r', Rules: [rule as never] } }));
    const base = { ID: 'dr', Priority: 1, Status: 'Enabled', DeleteMarkerReplication: { Status: 'Enabled' }, Destination: { Bucket: arn } };
    expect(await codeOf(put({ ...base, Filter: { Tag: { Key: 'a', Value: 'b' } } }))).toBe('InvalidRequest');
    expect(await codeOf(put({ ...base, Filter: { Prefix: '' }, Destination: { Bucket: 'arn:aws:s3:::elsewhere' } }))).toBe('InvalidRequest');
    expect(await codeOf(put({ ...base, Filter: { Prefix: '' }, Destination: { Bucket: arn, ReplicationTime: { Status: 'Enabled', Time: { Minutes: 15 } } } }))).toBe('InvalidRequest');
    await put({ ...base, Filter: { Prefix: 'obj/' }, Destination: { Bucket: arn, StorageClass: 'STANDARD' } });
    const again = await srcS3.send(new GetBucketReplicationCommand({ Bucket: 'src' }));
    expect(again.ReplicationConfiguration).toMatchObject({
      Role: 'arn:aws:iam::1:role/r',
      Rules: [{ ID: 'dr', Priority: 1, Filter: { Prefix: 'obj/' }, Destination: { Bucket: arn, StorageClass: 'STANDARD' } }],
    });
    await srcS3.send(new DeleteBucketReplicationCommand({ Bucket: 'src' }));
    expect(await codeOf(srcS3.send(new GetBucketReplicationCommand({ Bucket: 'src' })))).toBe('ReplicationConfigurationNotFoundError');
  });
});
