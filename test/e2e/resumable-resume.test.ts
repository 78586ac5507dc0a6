/**
 * Resumable sessions over time (docs/development/kodo-protocol.md §5.5, §6): the official SDK resumes an interrupted v1 or v2 putFile
 * from its resume record file, sending only the missing blocks/parts; staged parts and blocks survive a server
 * restart (subprocess killed with SIGKILL, then stopped with SIGTERM, on the same data dir); and abandoned uploads
 * and blocks are garbage-collected by the expiry sweep once expired (612 / 701, their blob files gone), while
 * younger sessions are kept.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../src/objects/expiry.js';
import { qetag, qetagOfFile } from '../helpers/etag.js';
import { downloadSha1, seededBytes, sha1OfFile, writeSeededFile } from '../helpers/files.js';
import { sha1 } from '../helpers/http.js';
import { RawUp, ok, upToken, type BlockJson, type PartJson, type PartsJson } from '../helpers/resumable.js';
import { countBlobs } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { createBucket, expectError, expectStored, recordRequests } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'resume';

let s: TestServer;
let dir: string;
const children: ChildServer[] = [];

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  dir = await mkdtemp(join(tmpdir(), 'granary-resume-'));
});
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(['v1', 'v2'] as const)('the SDK resume record (%s)', (version) => {
  it('an interrupted putFile leaves a record; the next putFile sends only the missing piece and completes', async () => {
    const path = join(dir, `resume-${version}.bin`);
    await writeSeededFile(path, 10 * MiB, `resume-${version}`);
    const record = join(dir, `record-${version}.json`);
    const key = `resumed-${version}.bin`;
    const token = s.uploadToken({ scope: `${BUCKET}:${key}` });
    const up = new qiniu.resume_up.ResumeUploader(s.zoneConfig());
    const extra = (progress?: (done: number) => void): qiniu.resume_up.PutExtra =>
      qiniu.resume_up.PutExtra.create(undefined, { 'x:a': '1' }, undefined, record, progress, undefined, version);

    // First attempt: the progress callback throws once two 4 MiB pieces are acknowledged (the SDK stops there).
    await expect(
      up.putFile(token, key, path, extra((done) => {
        if (done >= 8 * MiB) throw new Error('interrupted');
      })),
    ).rejects.toThrow(/interrupted|unexpect/);
    const saved = JSON.parse(await readFile(record, 'utf8')) as { uploadId?: string; etags?: unknown[]; parts?: unknown[] };
    expect((version === 'v1' ? saved.parts : saved.etags)?.length).toBe(2);
    expect((await downloadSha1(s.url, BUCKET, key)).status).toBe(404);
    if (version === 'v2') {
      const listed = ok<PartsJson>(await new RawUp(s.url, token).list(BUCKET, key, saved.uploadId as string));
      expect(listed.parts.map((p) => p.partNumber)).toEqual([1, 2]);
    }

    // Second attempt with the same record: only the third piece travels.
    const rec = recordRequests(s);
    const r = await sdk(up.putFile(token, key, path, extra()));
    rec.stop();
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    expect(r.data).toEqual({ key, hash: await qetagOfFile(path), 'x:a': '1' });
    const sent = rec.seen.filter((x) => /^(POST \/mkblk|PUT |POST \/buckets\/[^/]+\/objects\/[^/]+\/uploads$)/.test(x));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(version === 'v1' ? /^POST \/mkblk\/2097152$/ : /^PUT .*\/3$/);
    expect(existsSync(record)).toBe(false); // the SDK drops its record after success
    const d = await downloadSha1(s.url, BUCKET, key);
    expect([d.status, d.sha1]).toEqual([200, await sha1OfFile(path)]);
  });
});

describe('a server restart', () => {
  it('keeps staged v2 parts and v1 blocks across SIGKILL and SIGTERM; both uploads then complete', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'granary-resume-restart-'));
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK };
    const port = await freePort();
    const start = async (): Promise<ChildServer> => {
      const c = await spawnServer(env, port);
      children.push(c);
      return c;
    };
    try {
      let server = await start();
      const host = `127.0.0.1:${port}`;
      (qiniu.conf as unknown as { UC_HOST: string }).UC_HOST = host;
      const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
      const config = new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
      const bm = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(AK, SK), config);
      expect((await bm.createBucket('restart', { regionId: 'z0' })).resp.statusCode).toBe(200);
      const up = new RawUp(server.url, upToken({ scope: 'restart' }));

      const v2 = seededBytes('restart-v2', 9 * MiB);
      const v2Parts = [v2.subarray(0, 4 * MiB), v2.subarray(4 * MiB, 8 * MiB), v2.subarray(8 * MiB)];
      const id = ok<{ uploadId: string }>(await up.init('restart', 'v2.bin')).uploadId;
      ok<PartJson>(await up.part('restart', 'v2.bin', id, 1, v2Parts[0] as Buffer));
      ok<PartJson>(await up.part('restart', 'v2.bin', id, 2, v2Parts[1] as Buffer));
      const v1 = seededBytes('restart-v1', 6 * MiB);
      const ctxA = await up.block(v1.subarray(0, 4 * MiB));
      const b1 = ok<BlockJson>(await up.mkblk(2 * MiB, v1.subarray(4 * MiB, 5 * MiB)));

      server.child.kill('SIGKILL');
      expect(await server.exited).toBe('SIGKILL');
      server = await start();
      const listed = ok<PartsJson>(await up.list('restart', 'v2.bin', id));
      expect(listed.parts.map((p) => [p.partNumber, p.size])).toEqual([
        [1, 4 * MiB],
        [2, 4 * MiB],
      ]);
      const e3 = ok<PartJson>(await up.part('restart', 'v2.bin', id, 3, v2Parts[2] as Buffer)).etag;
      const b2 = ok<BlockJson>(await up.bput(b1.ctx, MiB, v1.subarray(5 * MiB)));
      expect(b2.offset).toBe(2 * MiB);

      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      server = await start();
      const parts = [...listed.parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag })), { partNumber: 3, etag: e3 }];
      expect(ok(await up.complete('restart', 'v2.bin', id, { parts }))).toEqual({ key: 'v2.bin', hash: qetag(v2) });
      expect(ok(await up.mkfile(v1.length, [ctxA, b2.ctx], { key: 'v1.bin' }))).toEqual({ key: 'v1.bin', hash: qetag(v1) });
      for (const [key, content] of [['v2.bin', v2], ['v1.bin', v1]] as const) {
        const d = await downloadSha1(server.url, 'restart', key);
        expect([d.status, d.sha1], key).toEqual([200, sha1(content)]);
      }
      server.child.kill('SIGTERM');
      await server.exited;
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the expiry sweep (runs last: the clock jumps)', () => {
  it('drops uploads and blocks older than 7 days with their blob files, and keeps younger ones', async () => {
    const up = new RawUp(s.url, s.uploadToken({ scope: BUCKET, expires: 30 * 86400 }));
    const baseline = await countBlobs(s);
    const id = ok<{ uploadId: string }>(await up.init(BUCKET, 'abandoned.bin')).uploadId;
    const etag = ok<PartJson>(await up.part(BUCKET, 'abandoned.bin', id, 1, seededBytes('gc1', 4 * MiB))).etag;
    ok(await up.part(BUCKET, 'abandoned.bin', id, 2, seededBytes('gc2', 1000)));
    const done = ok<BlockJson>(await up.mkblk(1000, seededBytes('gc3', 1000)));
    const partial = ok<BlockJson>(await up.mkblk(2000, seededBytes('gc4', 1000)));
    expect(await countBlobs(s)).toBe(baseline + 4);

    // 6 days on: nothing has expired, the sweep keeps everything.
    s.clock.advance(6 * 86400);
    await sweepExpired(s.running.g);
    expect(await countBlobs(s)).toBe(baseline + 4);
    expect(ok<PartsJson>(await up.list(BUCKET, 'abandoned.bin', id)).parts).toHaveLength(2);

    // 8 days on: a young upload started just now survives; the abandoned sessions go.
    s.clock.advance(2 * 86400);
    const young = ok<{ uploadId: string }>(await up.init(BUCKET, 'young.bin')).uploadId;
    ok(await up.part(BUCKET, 'young.bin', young, 1, seededBytes('young', 500)));
    expectError(await up.list(BUCKET, 'abandoned.bin', id), 612); // expired already, before any sweep
    expect(await countBlobs(s)).toBe(baseline + 5);
    await sweepExpired(s.running.g);
    expect(await countBlobs(s)).toBe(baseline + 1);
    expect(await s.running.g.meta.sessions.getUpload(id)).toBeUndefined();
    expectError(await up.list(BUCKET, 'abandoned.bin', id), 612);
    expectError(await up.part(BUCKET, 'abandoned.bin', id, 3, Buffer.from('x')), 612);
    expectError(await up.complete(BUCKET, 'abandoned.bin', id, { parts: [{ partNumber: 1, etag }] }), 612);
    expectError(await up.abort(BUCKET, 'abandoned.bin', id), 612);
    expectError(await up.bput(partial.ctx, 1000, seededBytes('gc5', 1000)), 701);
    expectError(await up.mkfile(1000, [done.ctx], { key: 'abandoned-v1.bin' }), 701);
    expect(await countBlobs(s)).toBe(baseline + 1);

    const young1 = ok<PartsJson>(await up.list(BUCKET, 'young.bin', young)).parts[0];
    ok(await up.complete(BUCKET, 'young.bin', young, { parts: [{ partNumber: 1, etag: young1?.etag }] }));
    await expectStored(s, BUCKET, 'young.bin', seededBytes('young', 500));
  });
});
