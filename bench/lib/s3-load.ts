/**
 * The ceiling of the cluster bench (bench/cluster.ts): the same operations sent straight to the S3 server Granary's
 * blobs live in, through @aws-sdk/client-s3 (the client Granary's S3 BlobStore uses, keep-alive connections):
 * PutObject of `size`-byte objects under distinct keys, or GetObject of one key, `concurrency` at a time for
 * `durationMs`. Run by the load-generator child (bench/client.ts).
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { msSince } from './stats.js';

/** S3 requests at a fixed concurrency for a fixed time (ops/s). */
export interface S3RateJob {
  kind: 's3-put' | 's3-get';
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  /** s3-put: keys are `<key><n>`; s3-get: the one key read (must hold `size` bytes). */
  key: string;
  size: number;
  concurrency: number;
  durationMs: number;
}

/** What the client counts (bench/client.ts Tally). */
export interface S3Tally {
  ok: number;
  errors: number;
  firstError?: string;
  bytes: number;
  latencies: number[];
}

/** Runs `job`; counts successes, bytes and latencies (ms). */
export async function s3Rate(job: S3RateJob): Promise<S3Tally> {
  const t: S3Tally = { ok: 0, errors: 0, bytes: 0, latencies: [] };
  const client = new S3Client({
    endpoint: job.endpoint,
    region: job.region,
    forcePathStyle: true,
    credentials: { accessKeyId: job.accessKeyId, secretAccessKey: job.secretAccessKey },
  });
  const body = Buffer.alloc(job.size, 7);
  const deadline = performance.now() + job.durationMs;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const start = process.hrtime.bigint();
      try {
        if (job.kind === 's3-put') {
          await client.send(new PutObjectCommand({ Bucket: job.bucket, Key: `${job.key}${next++}`, Body: body, ContentLength: body.length }));
        } else {
          const res = await client.send(new GetObjectCommand({ Bucket: job.bucket, Key: job.key }));
          const bytes = await res.Body?.transformToByteArray();
          if (bytes?.length !== job.size) throw new Error(`GetObject: ${bytes?.length} bytes, expected ${job.size}`);
        }
        t.ok++;
        t.bytes += job.size;
        t.latencies.push(msSince(start));
      } catch (err) {
        t.errors++;
        t.firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, worker));
  client.destroy();
  return t;
}
