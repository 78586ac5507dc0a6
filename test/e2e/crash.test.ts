/**
 * Crash safety: the server is SIGKILLed in the middle of 20 parallel uploads that overwrite existing
 * keys; after a restart every key holds exactly its old or its new content (the new one wherever the upload
 * was acknowledged) and no temporary file remains. The same on a versioned bucket (docs/reference/versioning.md):
 * every key then has its old version and either no new one (old current) or a complete one (new current, old
 * noncurrent and still readable).
 */
import { GetObjectCommand, ListObjectVersionsCommand, PutBucketVersioningCommand } from '@aws-sdk/client-s3';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, describe, expect, it } from 'vitest';
import { AK, SK } from '../helpers/server.js';
import { s3Client } from '../helpers/s3.js';
import { freePort, sdkAt, spawnServer } from '../helpers/subprocess.js';

const KEYS = 20;
const BOUNDARY = '----granarycrash';

function content(kind: 'old' | 'new', i: number): Buffer {
  // Distinct, position-dependent bytes: a torn or mixed object cannot pass for either version.
  const size = kind === 'old' ? 64 * 1024 + i : 3 * 1024 * 1024 + i;
  const buf = Buffer.alloc(size);
  for (let j = 0; j + 4 <= size; j += 4) buf.writeUInt32LE((Math.imul(j, 2654435761) + i * 97 + (kind === 'new' ? 1 : 0)) >>> 0, j);
  return buf;
}

function multipart(token: string, key: string, file: Buffer): { head: Buffer; tail: Buffer } {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="token"\r\n\r\n${token}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="key"\r\n\r\n${key}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  return { head: Buffer.concat([head, file]), tail: Buffer.from(`\r\n--${BOUNDARY}--\r\n`) };
}

describe.each(['unversioned', 'versioned'] as const)('crash during parallel overwrites (%s bucket)', (mode) => {
  let dataDir = '';
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('leaves every key with its old or new content and no temporary file', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-crash-'));
    const s3Port = mode === 'versioned' ? await freePort() : 0;
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_S3_PORT: String(s3Port) };
    const port = await freePort();
    const first = await spawnServer(env, port);
    const { mac, config, bm } = sdkAt(port);
    expect((await bm.createBucket('crash', { regionId: 'z0' })).resp.statusCode).toBe(200);
    const s3 = mode === 'versioned' ? s3Client(`http://127.0.0.1:${s3Port}`, AK, SK) : undefined;
    await s3?.send(new PutBucketVersioningCommand({ Bucket: 'crash', VersioningConfiguration: { Status: 'Enabled' } }));
    const token = new qiniu.rs.PutPolicy({ scope: 'crash' } as qiniu.rs.PutPolicyOptions).uploadToken(mac);
    const overwriteToken = (key: string): string =>
      new qiniu.rs.PutPolicy({ scope: `crash:${key}` } as qiniu.rs.PutPolicyOptions).uploadToken(mac);
    const uploader = new qiniu.form_up.FormUploader(config);
    for (let i = 0; i < KEYS; i++) {
      const r = await uploader.put(token, `k${i}`, content('old', i), new qiniu.form_up.PutExtra());
      expect(r.resp.statusCode).toBe(200);
    }

    // 20 parallel overwrites. Every request first sends its head and half of the new bytes; then the even ones
    // send the rest (they commit, some are acknowledged), the odd ones stay cut mid-body; then SIGKILL.
    const acknowledged = new Set<number>();
    const settled: Promise<void>[] = [];
    const started: Promise<void>[] = [];
    const reqs = Array.from({ length: KEYS }, (_, i) => {
      const { head, tail } = multipart(overwriteToken(`k${i}`), `k${i}`, content('new', i));
      const req = request(`${first.url}/`, {
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
      started.push(new Promise<void>((resolve) => req.write(head.subarray(0, half), () => resolve())));
      return { req, rest: Buffer.concat([head.subarray(half), tail]) };
    });
    await Promise.all(started);
    const completing = reqs.filter((_, i) => i % 2 === 0);
    await Promise.all(completing.map(({ req, rest }) => new Promise<void>((resolve) => req.end(rest, () => resolve()))));
    // Wait for the first acknowledgement so the kill lands among commits, not before them.
    await Promise.race(settled);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    await Promise.all(settled);

    const second = await spawnServer(env, port);
    try {
      expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
      let newCount = 0;
      for (let i = 0; i < KEYS; i++) {
        const res = await fetch(`${second.url}/crash/k${i}`);
        expect(res.status).toBe(200);
        const body = Buffer.from(await res.arrayBuffer());
        const isOld = body.equals(content('old', i));
        const isNew = body.equals(content('new', i));
        expect(isOld || isNew, `k${i} holds neither its old nor its new content (${body.length} bytes)`).toBe(true);
        if (acknowledged.has(i)) expect(isNew, `k${i} was acknowledged but lost`).toBe(true);
        if (isNew) newCount++;
        if (i % 2 === 1) expect(isOld, `k${i} was never completed but changed`).toBe(true);
        if (s3) {
          // The old version is always there; a new one only when it is the current (complete) content.
          const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: 'crash', Prefix: `k${i}`, Delimiter: '/' }));
          const own = (listed.Versions ?? []).filter((v) => v.Key === `k${i}`);
          expect(own.length).toBe(isNew ? 2 : 1);
          const oldest = own[own.length - 1]!;
          const old = await s3.send(new GetObjectCommand({ Bucket: 'crash', Key: `k${i}`, VersionId: oldest.VersionId }));
          expect(Buffer.from(await old.Body!.transformToByteArray()).equals(content('old', i))).toBe(true);
        }
      }
      s3?.destroy();
      expect(acknowledged.size).toBeGreaterThan(0);
      expect(newCount).toBeGreaterThanOrEqual(acknowledged.size);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});
