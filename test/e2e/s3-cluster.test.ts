/**
 * Both doors on two cluster nodes sharing PostgreSQL and S3 blobs (test/helpers/cluster.ts); node A runs two
 * workers, so its S3 port is the primary's and each connection is handed to a worker. What one node writes
 * through either API, the other reads, lists and deletes through either.
 *
 * Then bucket versioning on the cluster (docs/reference/versioning.md), through the AWS SDK v3, one node after the
 * other: the versioning life of a key (put, overwrite, delete marker, ListObjectVersions paged, an old version read,
 * restore by copy, a version deleted for good, Suspended → the null version); writes alternating between the nodes
 * back to back get ids that sort in write order (decided under the key's lock in PostgreSQL, whatever each node's
 * clock says); garbage collection on the shared stores keeps a noncurrent version's blob; and (last) node B
 * SIGKILLed during versioned overwrites leaves every key its old version and either no new one or a complete one.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { loadConfig } from '../../src/config.js';
import type { Granary } from '../../src/context.js';
import { findOrphanBlobs } from '../../src/objects/blobs.js';
import { openStores } from '../../src/store/open.js';
import { sdkOn, startClusterBackend, startNode, type ClusterBackend, type ClusterNode } from '../helpers/cluster.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, sdk } from '../helpers/server.js';
import { freePort } from '../helpers/subprocess.js';

let backend: ClusterBackend;
let a: ClusterNode;
let b: ClusterNode;
let s3a: S3Client;
let s3b: S3Client;
const B = 's3-cluster';
const keys = { accessKey: AK, secretKey: SK };

beforeAll(async () => {
  backend = await startClusterBackend();
  const [portA, portB] = [await freePort(), await freePort()];
  const common = { ...backend.env, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_LOG_LEVEL: 'warn' };
  [a, b] = await Promise.all([
    startNode('a', common, { GRANARY_S3_PORT: String(portA), GRANARY_WORKERS: '2' }),
    startNode('b', common, { GRANARY_S3_PORT: String(portB) }),
  ]);
  s3a = s3Client(`http://127.0.0.1:${portA}`, AK, SK);
  s3b = s3Client(`http://127.0.0.1:${portB}`, AK, SK);
}, 300_000);

afterAll(async () => {
  s3a?.destroy();
  s3b?.destroy();
  await Promise.all([a?.stop(), b?.stop()]);
  await backend?.stop();
});

describe('S3 and Kodo on two nodes', () => {
  it('a bucket made through S3 on A is a Kodo bucket on B', async () => {
    await s3a.send(new CreateBucketCommand({ Bucket: B }));
    const listed = await sdk<string[]>(sdkOn(b, keys).bm.listBucket());
    expect(listed.data).toContain(B);
  });

  it('S3 put on A → S3 and Kodo reads on B; Kodo upload on B → S3 read on A', async () => {
    const body = Buffer.alloc(300_000, 'cluster');
    const put = await s3a.send(new PutObjectCommand({ Bucket: B, Key: 'a/one.bin', Body: body, Metadata: { node: 'a' } }));
    expect(put.ETag).toBe(`"${createHash('md5').update(body).digest('hex')}"`);
    const got = await s3b.send(new GetObjectCommand({ Bucket: B, Key: 'a/one.bin' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    expect(got.Metadata).toEqual({ node: 'a' });
    const stat = await sdk<{ fsize: number }>(sdkOn(b, keys).bm.stat(B, 'a/one.bin'));
    expect(stat.data.fsize).toBe(body.length);

    const onB = sdkOn(b, keys);
    const up = await sdk(new qiniu.form_up.FormUploader(onB.config).put(onB.token({ scope: `${B}:b/two.txt` }), 'b/two.txt', Buffer.from('from b'), new qiniu.form_up.PutExtra()));
    expect(up.status).toBe(200);
    const two = await s3a.send(new GetObjectCommand({ Bucket: B, Key: 'b/two.txt' }));
    expect(await two.Body!.transformToString()).toBe('from b');
  });

  it('lists on either node alike; a delete on A is gone on B', async () => {
    const onA = await s3a.send(new ListObjectsV2Command({ Bucket: B, Delimiter: '/' }));
    const onB = await s3b.send(new ListObjectsV2Command({ Bucket: B, Delimiter: '/' }));
    expect(onA.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/', 'b/']);
    expect(onB.CommonPrefixes).toEqual(onA.CommonPrefixes);
    await s3a.send(new DeleteObjectCommand({ Bucket: B, Key: 'a/one.bin' }));
    expect(await codeOf(s3b.send(new HeadObjectCommand({ Bucket: B, Key: 'a/one.bin' })))).toBe('NotFound');
    expect((await sdk(sdkOn(b, keys).bm.stat(B, 'a/one.bin'))).status).toBe(612);
  });
});

async function versionedBucket(name: string): Promise<void> {
  await s3a.send(new CreateBucketCommand({ Bucket: name }));
  await s3b.send(new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status: 'Enabled' } }));
}

async function text(s3: S3Client, bucket: string, key: string, versionId?: string): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(versionId ? { VersionId: versionId } : {}) }));
  return got.Body!.transformToString();
}

/** Every version of the bucket through `s3`, paged `maxKeys` at a time: [key, id, latest, marker]. */
async function versions(s3: S3Client, bucket: string, maxKeys = 1000): Promise<Array<[string, string, boolean, boolean]>> {
  const out: Array<[string, string, boolean, boolean]> = [];
  let keyMarker: string | undefined;
  let idMarker: string | undefined;
  for (;;) {
    const page = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, MaxKeys: maxKeys, KeyMarker: keyMarker, VersionIdMarker: idMarker }));
    const all = [
      ...(page.Versions ?? []).map((v) => [v.Key!, v.VersionId!, v.IsLatest!, false] as [string, string, boolean, boolean]),
      ...(page.DeleteMarkers ?? []).map((m) => [m.Key!, m.VersionId!, m.IsLatest!, true] as [string, string, boolean, boolean]),
    ];
    // The SDK splits versions and markers: back to the wire order for these tests' keys — by key, the current one
    // first, then ids newest first, a noncurrent null version (written before versioning) last.
    const rank = (v: [string, string, boolean, boolean]): string => (v[2] ? '~' : v[1] === 'null' ? '' : v[1]);
    all.sort((x, y) => (x[0] !== y[0] ? (x[0] < y[0] ? -1 : 1) : rank(x) === rank(y) ? 0 : rank(x) < rank(y) ? 1 : -1));
    out.push(...all);
    if (!page.IsTruncated) return out;
    keyMarker = page.NextKeyMarker;
    idMarker = page.NextVersionIdMarker;
  }
}

describe('versioning on two nodes sharing PostgreSQL', () => {
  it('the life of a key, one step on A, the next on B', async () => {
    const bucket = 'ver-cluster';
    await s3a.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3a.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'v0' }));
    await s3b.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    const v1 = (await s3a.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'v1' }))).VersionId!;
    const v2 = (await s3b.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'v2' }))).VersionId!;
    expect(v1).toMatch(/^[0-9a-f]{32}$/);
    expect(v2 > v1).toBe(true);
    expect(await text(s3a, bucket, 'k')).toBe('v2');
    expect(await text(s3a, bucket, 'k', v1)).toBe('v1');
    expect(await text(s3b, bucket, 'k', 'null')).toBe('v0');

    const del = await s3b.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k' }));
    expect(del.DeleteMarker).toBe(true);
    expect(del.VersionId! > v2).toBe(true);
    expect(await codeOf(s3a.send(new GetObjectCommand({ Bucket: bucket, Key: 'k' })))).toBe('NoSuchKey');
    expect((await sdk(sdkOn(a, keys).bm.stat(bucket, 'k'))).status).toBe(612);
    // Paged two at a time through A: every version once, newest first.
    expect(await versions(s3a, bucket, 2)).toEqual([
      ['k', del.VersionId!, true, true],
      ['k', v2, false, false],
      ['k', v1, false, false],
      ['k', 'null', false, false],
    ]);

    // Restore v1 on A by copy; read on B.
    const restored = await s3a.send(new CopyObjectCommand({ Bucket: bucket, Key: 'k', CopySource: `${bucket}/k?versionId=${v1}` }));
    expect(restored.CopySourceVersionId).toBe(v1);
    expect(await text(s3b, bucket, 'k')).toBe('v1');

    // Delete v2 for good on B: gone on A; the current one is untouched.
    expect((await s3b.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k', VersionId: v2 }))).VersionId).toBe(v2);
    expect(await codeOf(s3a.send(new GetObjectCommand({ Bucket: bucket, Key: 'k', VersionId: v2 })))).toBe('NoSuchVersion');
    // Deleting the current version for good brings the marker back as current.
    await s3a.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k', VersionId: restored.VersionId! }));
    expect(await codeOf(s3b.send(new HeadObjectCommand({ Bucket: bucket, Key: 'k' })))).toBe('NotFound');

    // Suspended: the null version is replaced, the versions written while Enabled stay.
    await s3a.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Suspended' } }));
    const put = await s3b.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'suspended' }));
    expect(put.VersionId).toBeUndefined();
    expect(await text(s3a, bucket, 'k', 'null')).toBe('suspended');
    expect((await versions(s3b, bucket)).map((v) => [v[1], v[2], v[3]])).toEqual([
      ['null', true, false],
      [del.VersionId!, false, true],
      [v1, false, false],
    ]);
    // The bucket is not empty while versions remain.
    expect(await codeOf(s3b.send(new DeleteBucketCommand({ Bucket: bucket })))).toBe('BucketNotEmpty');
  });

  it('writes alternating between the nodes, back to back, get ids in write order', async () => {
    const bucket = 'ver-order';
    await versionedBucket(bucket);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const s3 = i % 2 === 0 ? s3a : s3b;
      ids.push((await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'hot', Body: `w${i}` }))).VersionId!);
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect((await versions(s3b, bucket, 5)).map((v) => v[1])).toEqual([...ids].reverse());
  });

  it('garbage collection on the shared stores keeps the blobs of noncurrent versions', async () => {
    const bucket = 'ver-gc';
    await versionedBucket(bucket);
    const big = 'x'.repeat(64 * 1024); // over the inline size: a blob in S3
    const first = await s3a.send(new PutObjectCommand({ Bucket: bucket, Key: 'g', Body: `${big}1` }));
    await s3b.send(new PutObjectCommand({ Bucket: bucket, Key: 'g', Body: `${big}2` }));
    await s3a.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'g' }));
    // `granary gc`'s pass over the cluster's stores, with every blob old enough to be looked at.
    const dataDir = await mkdtemp(join(tmpdir(), 'granary-gc-'));
    const config = loadConfig({ ...backend.env, GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK });
    const stores = await openStores(config);
    try {
      const g = { ...stores, config, log: { warn: () => undefined } } as unknown as Granary;
      const report = await findOrphanBlobs(g, Date.now() + 3_600_000, { remove: true });
      expect(report.removed).toBe(0);
    } finally {
      await stores.meta.close();
      await rm(dataDir, { recursive: true, force: true });
    }
    expect(await text(s3b, bucket, 'g', first.VersionId)).toBe(`${big}1`);
  });
});

const BOUNDARY = '----granaryvercrash';

/** Distinct, position-dependent bytes: a torn or mixed object cannot pass for either version. */
function content(kind: 'old' | 'new', i: number): Buffer {
  const size = kind === 'old' ? 64 * 1024 + i : 2 * 1024 * 1024 + i;
  const buf = Buffer.alloc(size);
  for (let j = 0; j + 4 <= size; j += 4) buf.writeUInt32LE((Math.imul(j, 2654435761) + i * 97 + (kind === 'new' ? 1 : 0)) >>> 0, j);
  return buf;
}

// Last: it kills node B.
describe('a node killed during versioned overwrites', () => {
  it('leaves every key its old version and either no new one or a complete one', async () => {
    const bucket = 'ver-crash';
    const KEYS = 8;
    await versionedBucket(bucket);
    for (let i = 0; i < KEYS; i++) await s3a.send(new PutObjectCommand({ Bucket: bucket, Key: `k${i}`, Body: content('old', i) }));
    const onB = sdkOn(b, keys);
    // Form uploads through B: each sends its head and half its bytes; the even ones then send the rest (they
    // commit, some are acknowledged), the odd ones stay cut mid-body; then B is SIGKILLed.
    const acknowledged = new Set<number>();
    const settled: Promise<void>[] = [];
    const halfSent: Promise<void>[] = [];
    const reqs = Array.from({ length: KEYS }, (_, i) => {
      const file = content('new', i);
      const head = Buffer.concat([
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="token"\r\n\r\n${onB.token({ scope: `${bucket}:k${i}` })}\r\n` +
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="key"\r\n\r\nk${i}\r\n` +
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
        file,
      ]);
      const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
      const req = request(`${b.url}/`, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': head.length + tail.length },
      });
      settled.push(
        new Promise<void>((resolve) => {
          req.on('response', (res) => {
            res.resume();
            res.on('end', () => {
              if (res.statusCode === 200) acknowledged.add(i);
              resolve();
            });
            res.on('error', () => resolve());
          });
          req.on('error', () => resolve());
        }),
      );
      const half = Math.floor(head.length / 2);
      halfSent.push(new Promise<void>((resolve) => req.write(head.subarray(0, half), () => resolve())));
      return { req, rest: Buffer.concat([head.subarray(half), tail]) };
    });
    await Promise.all(halfSent);
    const finished = reqs.filter((_, i) => i % 2 === 0).map(({ req, rest }) => new Promise<void>((resolve) => req.end(rest, () => resolve())));
    await Promise.all(finished);
    await b.kill();
    await Promise.all(settled);

    // Through A: every key has its old version; the new one is either absent (old current) or whole (current).
    let committed = 0;
    for (let i = 0; i < KEYS; i++) {
      const list = (await versions(s3a, bucket)).filter((v) => v[0] === `k${i}`);
      const current = Buffer.from(await (await s3a.send(new GetObjectCommand({ Bucket: bucket, Key: `k${i}` }))).Body!.transformToByteArray());
      const oldest = list[list.length - 1]!;
      const old = Buffer.from(await (await s3a.send(new GetObjectCommand({ Bucket: bucket, Key: `k${i}`, VersionId: oldest[1] }))).Body!.transformToByteArray());
      expect(old.equals(content('old', i))).toBe(true);
      if (list.length === 1) {
        expect(acknowledged.has(i)).toBe(false);
        expect(current.equals(content('old', i))).toBe(true);
      } else {
        expect(list.length).toBe(2);
        expect(current.equals(content('new', i))).toBe(true);
        committed++;
      }
      if (i % 2 === 1) expect(list.length).toBe(1);
    }
    expect(committed).toBeGreaterThanOrEqual(acknowledged.size);
  });
});
