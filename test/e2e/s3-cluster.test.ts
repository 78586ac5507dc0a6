/**
 * Both doors on two cluster nodes sharing PostgreSQL and S3 blobs (test/helpers/cluster.ts); node A runs two
 * workers, so its S3 port is the primary's and each connection is handed to a worker. What one node writes
 * through either API, the other reads, lists and deletes through either.
 */
import { createHash } from 'node:crypto';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
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
