/**
 * One logging rule on every listener (src/log.ts `logAnswerError`): refusals that are nobody's fault — S3
 * `BucketAlreadyOwnedByYou` (rclone sends CreateBucket before every copy), a PUT into a missing bucket, Kodo's
 * 612/631, a client that hangs up mid-body — are logged at info without a stack; only server faults are errors.
 */
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entry, rawOp } from '../helpers/rs.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, waitUntil } from '../helpers/upload.js';

type Line = { level: number; msg: string; err?: { stack?: string }; status?: number };

describe('log levels of refused requests', () => {
  const lines: Line[] = [];
  let s: TestServer;
  let s3: S3Client;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Line);
        done();
      },
    });
    s = await startTestServer({}, pino({ level: 'info' }, sink));
    s3 = new S3Client({ endpoint: s.s3Url, region: 'z0', forcePathStyle: true, credentials: { accessKeyId: AK, secretAccessKey: SK } });
    await createBucket(s, 'logged');
  }, 60_000);
  afterAll(async () => {
    s3.destroy();
    await s.stop();
  });

  /** Sends a request head promising 100,000 bytes, then `start` and a few more bytes, then closes the connection. */
  async function hangUp(port: number, head: string, start = ''): Promise<void> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    await new Promise<void>((resolve) => socket.write(`${head}Content-Length: 100000\r\n\r\n${start}${'x'.repeat(10)}`, () => resolve()));
    socket.destroy();
  }

  it('rclone-style repeated CreateBucket, a missing bucket, Kodo 612/631 and client hang-ups log no error line', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'rclone-made' }));
    await expect(s3.send(new CreateBucketCommand({ Bucket: 'rclone-made' }))).rejects.toMatchObject({ name: 'BucketAlreadyOwnedByYou' });
    await expect(s3.send(new PutObjectCommand({ Bucket: 'no-such-bucket', Key: 'a', Body: 'x' }))).rejects.toMatchObject({ name: 'NoSuchBucket' });
    expect((await rawOp(s, `/stat/${entry('logged', 'missing')}`, { method: 'GET' })).status).toBe(612);
    expect((await rawOp(s, `/stat/${entry('no-such-bucket', 'k')}`, { method: 'GET' })).status).toBe(631);

    // Hang-ups mid-body: an authorised S3 PUT (presigned) and a Kodo form upload with a valid token.
    const s3Port = Number(new URL(s.s3Url!).port);
    const presigned = new URL(await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'logged', Key: 'gone.bin' }), { expiresIn: 600 }));
    await hangUp(s3Port, `PUT ${presigned.pathname}${presigned.search} HTTP/1.1\r\nHost: ${presigned.host}\r\n`);
    const boundary = 'b0undary';
    const form = `--${boundary}\r\nContent-Disposition: form-data; name="token"\r\n\r\n${s.uploadToken({ scope: 'logged' })}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="gone.bin"\r\n\r\n`;
    await hangUp(s.running.port, `POST / HTTP/1.1\r\nHost: 127.0.0.1:${s.running.port}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n`, form);
    await waitUntil(async () => lines.some((l) => l.msg === 's3: IncompleteBody'), 'the S3 hang-up is logged', 10_000);
    await waitUntil(async () => lines.some((l) => /request aborted|client closed the connection/.test(l.msg)), 'the Kodo hang-up is logged', 10_000);

    const refusals = lines.filter((l) => l.msg !== 'request' && (l.status !== undefined || l.err !== undefined));
    expect(refusals.length, JSON.stringify(lines.slice(-10))).toBeGreaterThanOrEqual(6);
    for (const l of lines) {
      expect(l.level, JSON.stringify(l)).toBeLessThan(50);
      expect(l.err?.stack, JSON.stringify(l)).toBeUndefined();
    }
    expect(refusals.map((l) => l.msg)).toEqual(expect.arrayContaining(['s3: BucketAlreadyOwnedByYou', 's3: NoSuchBucket', 's3: IncompleteBody']));
    expect(refusals.every((l) => l.level === 30)).toBe(true);
  });
});
