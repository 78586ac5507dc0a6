/**
 * Bucket replication survives a SIGKILL of the source in the middle of a copy (docs/guides/replication.md): the
 * source runs as a `granary serve` subprocess with a bandwidth-limited rule, is killed while a multipart copy of a
 * 12 MiB object is under way at the destination, and started again on the same data dir: the row its dead process
 * held is taken back and everything converges byte for byte.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BIN, cleanEnv, freePort, REPO_ROOT, runAsync } from '../helpers/cli.js';
import { until } from '../helpers/queue-fixtures.js';
import { s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { spawnServer, type ChildServer } from '../helpers/subprocess.js';

let dst: TestServer;
let dstS3: S3Client;
let dir: string;
let env: Record<string, string>;
let port: number;
let source: ChildServer | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-repl-kill-'));
  port = await freePort();
  env = {
    GRANARY_DATA_DIR: dir,
    GRANARY_ACCESS_KEY: AK,
    GRANARY_SECRET_KEY: SK,
    GRANARY_S3_PORT: String(await freePort()),
    GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32',
    GRANARY_REPLICATION_MULTIPART_BYTES: String(5 * 1024 * 1024),
    GRANARY_REPLICATION_RETRY_MS: '50',
  };
  dst = await startTestServer();
  dstS3 = s3Client(dst.s3Url!, AK, SK);
  await dstS3.send(new CreateBucketCommand({ Bucket: 'dst' }));
});

afterAll(async () => {
  source?.child.kill('SIGKILL');
  await dst?.stop();
  await rm(dir, { recursive: true, force: true });
});

it('a copy cut by SIGKILL of the source is taken back after the restart and converges', async () => {
  source = await spawnServer(env, port);
  const srcS3 = s3Client(`http://127.0.0.1:${env.GRANARY_S3_PORT}`, AK, SK);
  await srcS3.send(new CreateBucketCommand({ Bucket: 'src' }));
  const big = Buffer.alloc(12 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
  await srcS3.send(new PutObjectCommand({ Bucket: 'src', Key: 'big.bin', Body: big, ContentType: 'application/x-big' }));
  for (let i = 0; i < 5; i++) await srcS3.send(new PutObjectCommand({ Bucket: 'src', Key: `small/${i}`, Body: `small ${i}` }));
  // 4 MiB/s: the 12 MiB copy takes about 3 s, long enough to be cut.
  const add = await runAsync(
    process.execPath,
    [BIN, 'replication', 'add', 'src', '--endpoint', dst.s3Url!, '--target-bucket', 'dst', '--dest-access-key', AK, '--dest-secret-key', SK, '--existing', '--bandwidth', '4M'],
    { cwd: REPO_ROOT, env: cleanEnv(env) },
  );
  expect(add.stderr).toBe('');
  await until(async () => ((await dstS3.send(new ListMultipartUploadsCommand({ Bucket: 'dst' }))).Uploads ?? []).length > 0, 'a multipart copy under way', 30_000);
  source.child.kill('SIGKILL');
  await source.exited;
  source = await spawnServer(env, port);
  await until(
    async () => {
      const keys = ((await dstS3.send(new ListObjectsV2Command({ Bucket: 'dst' }))).Contents ?? []).map((o) => o.Key);
      return keys.length === 6;
    },
    'every object at the destination',
    40_000,
  );
  const got = await dstS3.send(new GetObjectCommand({ Bucket: 'dst', Key: 'big.bin' }));
  expect(got.ContentType).toBe('application/x-big');
  expect(Buffer.from(await got.Body!.transformToByteArray()).equals(big)).toBe(true);
  for (let i = 0; i < 5; i++) {
    const r = await dstS3.send(new GetObjectCommand({ Bucket: 'dst', Key: `small/${i}` }));
    expect(await r.Body!.transformToString()).toBe(`small ${i}`);
  }
});
