/**
 * Cluster mode end to end (docs/guides/running-a-cluster.md): two Granary nodes as separate processes with data dirs of
 * their own, sharing only a PostgreSQL database (GRANARY_METADATA) and a radosgw bucket (GRANARY_BLOBS), both
 * started by this file. Requests alternate between the nodes (node A, node B) through the official SDK: the root key
 * pair one node generated is the other's too; uploads (form, inline and 1 MiB; resumable v1 and v2 with pieces sent
 * to one node and completed on the other), management (stat, chgm, copy, move, delete, batch), listing with
 * markers, downloads with Range, an image fop, a pfop job, an async fetch, bucket settings, an account key and a
 * bound domain, each made on one node and seen on the other.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterBackend, runCliWith, sdkOn, signedJson, startNode, type ClusterBackend, type ClusterNode } from '../helpers/cluster.js';
import { ConsoleClient } from '../helpers/console.js';
import { serveBytes, startOrigin, type Origin } from '../helpers/fetch-origin.js';
import { seededBytes } from '../helpers/files.js';
import { rawRequest, type RawResponse } from '../helpers/http.js';
import type { Record as PrefopRecord } from '../helpers/pfop.js';
import { saveas } from '../helpers/pfop.js';
import { ok, RawUp, type BlockJson, type PartJson } from '../helpers/resumable.js';
import { sdk } from '../helpers/server.js';
import { freePort } from '../helpers/subprocess.js';
import { FIXTURE_IMAGES, waitUntil } from '../helpers/upload.js';

const B = 'shared';
const KiB = 1024;
const MiB = 1024 * KiB;

let backend: ClusterBackend;
let a: ClusterNode;
let b: ClusterNode;
let origin: Origin;
let root: { accessKey: string; secretKey: string };
let consoleA: string;

const sha1 = (buf: Buffer): string => createHash('sha1').update(buf).digest('hex');

/** The SDK at `node` with the root pair. */
const at = (node: ClusterNode) => sdkOn(node, root);

/** GET `/<bucket>/<key>` from `node` (public bucket), optionally with headers. */
async function get(node: ClusterNode, key: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(`${node.url}/${B}/${encodeURIComponent(key)}`, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** A form upload of `content` as `key` through `node`'s SDK. */
async function formPut(node: ClusterNode, key: string, content: Buffer): Promise<{ status: number; data: { key?: string; hash?: string } }> {
  const s = at(node);
  return sdk(new qiniu.form_up.FormUploader(s.config).put(s.token({ scope: B }), key, content, new qiniu.form_up.PutExtra()));
}

beforeAll(async () => {
  [backend, origin] = await Promise.all([startClusterBackend(), startOrigin()]);
  const consolePort = await freePort();
  consoleA = `http://127.0.0.1:${consolePort}`;
  // No GRANARY_ACCESS_KEY: the nodes start together and must agree on one generated root pair.
  const common = { ...backend.env, GRANARY_OUTBOUND_ALLOW: '127.0.0.1', GRANARY_LOG_LEVEL: 'warn' };
  [a, b] = await Promise.all([
    startNode('a', common, { GRANARY_CONSOLE_PORT: String(consolePort), GRANARY_CONSOLE_HOST: '127.0.0.1' }),
    startNode('b', common),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await origin?.close();
  await backend?.stop();
});

describe('two nodes sharing PostgreSQL and S3', () => {
  it('share the one root key pair generated at the first start (the CLI reads it from the shared metadata)', async () => {
    const printed = await Promise.any([a.output(/AccessKey: (\S+)\n\s*SecretKey: (\S+)/), b.output(/AccessKey: (\S+)\n\s*SecretKey: (\S+)/)]);
    const shown = runCliWith(['keys', 'show'], { ...backend.env, GRANARY_DATA_DIR: join(a.dataDir, 'cli') });
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`AccessKey: ${printed[1]}\nSecretKey: ${printed[2]}`);
    root = { accessKey: printed[1] ?? '', secretKey: printed[2] ?? '' };
    expect((await sdk(at(a).bm.createBucket(B, { regionId: 'z0' }))).status).toBe(200);
    const listed = await sdk<string[]>(at(b).bm.listBucket());
    expect(listed.status).toBe(200);
    expect(listed.data).toContain(B);
  });

  it('form uploads on one node are read on the other: inline (4 KiB) and 1 MiB, with Range', async () => {
    const small = seededBytes('small', 4 * KiB);
    const big = seededBytes('big', MiB);
    expect((await formPut(a, 'small.bin', small)).status).toBe(200);
    expect((await formPut(b, 'big.bin', big)).status).toBe(200);
    expect((await get(b, 'small.bin')).body.equals(small)).toBe(true);
    const whole = await get(a, 'big.bin');
    expect(whole.status).toBe(200);
    expect(sha1(whole.body)).toBe(sha1(big));
    const range = await get(b, 'big.bin', { Range: 'bytes=1000-2999' });
    expect(range.status).toBe(206);
    expect(range.headers.get('content-range')).toBe(`bytes 1000-2999/${MiB}`);
    expect(range.body.equals(big.subarray(1000, 3000))).toBe(true);
  });

  it('resumable v1: blocks on A, mkfile on B', async () => {
    const content = seededBytes('v1', 4 * MiB + 300 * KiB);
    const token = at(a).token({ scope: B });
    const upA = new RawUp(a.url, token);
    const upB = new RawUp(b.url, token);
    const first = await upA.block(content.subarray(0, 4 * MiB), MiB);
    // The second block starts on A and goes on on B: the block's state is shared.
    const mk = ok<BlockJson>(await upA.mkblk(300 * KiB, content.subarray(4 * MiB, 4 * MiB + 100 * KiB)));
    const second = ok<BlockJson>(await upB.bput(mk.ctx, mk.offset, content.subarray(4 * MiB + 100 * KiB)));
    const made = ok<{ key: string; hash: string }>(await upB.mkfile(content.length, [first, second.ctx], { key: 'v1.bin' }));
    expect(made.key).toBe('v1.bin');
    expect(sha1((await get(a, 'v1.bin')).body)).toBe(sha1(content));
  });

  it('resumable v2: init and part 1 on A, part 2 on B, complete on A; an SDK v2 upload on B', async () => {
    const parts = [seededBytes('p1', 5 * MiB), seededBytes('p2', 700 * KiB)];
    const token = at(a).token({ scope: B });
    const upA = new RawUp(a.url, token);
    const upB = new RawUp(b.url, token);
    const { uploadId } = ok<{ uploadId: string }>(await upA.init(B, 'v2.bin'));
    const p1 = ok<PartJson>(await upA.part(B, 'v2.bin', uploadId, 1, parts[0] as Buffer));
    const p2 = ok<PartJson>(await upB.part(B, 'v2.bin', uploadId, 2, parts[1] as Buffer));
    const listed = ok<{ parts: unknown[] }>(await upA.list(B, 'v2.bin', uploadId));
    expect(listed.parts).toHaveLength(2);
    ok(await upA.complete(B, 'v2.bin', uploadId, { parts: [{ partNumber: 1, etag: p1.etag }, { partNumber: 2, etag: p2.etag }] }));
    expect(sha1((await get(b, 'v2.bin')).body)).toBe(sha1(Buffer.concat(parts)));

    const content = seededBytes('sdk-v2', 9 * MiB);
    const s = at(b);
    const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, 4 * MiB, 'v2');
    const r = await sdk(
      new qiniu.resume_up.ResumeUploader(s.config).putStream(s.token({ scope: B }), 'sdk-v2.bin', Readable.from([content]), content.length, extra),
    );
    expect(r.status).toBe(200);
    expect(sha1((await get(a, 'sdk-v2.bin')).body)).toBe(sha1(content));
  });

  it('stat, chgm, copy, move, delete and batch alternate between the nodes', async () => {
    const content = seededBytes('ops', 10 * KiB);
    expect((await formPut(a, 'ops.txt', content)).status).toBe(200);
    expect((await sdk(at(b).bm.changeMime(B, 'ops.txt', 'text/x-granary'))).status).toBe(200);
    const stat = await sdk<{ mimeType: string; fsize: number }>(at(a).bm.stat(B, 'ops.txt'));
    expect(stat.data).toMatchObject({ mimeType: 'text/x-granary', fsize: content.length });
    expect((await sdk(at(a).bm.copy(B, 'ops.txt', B, 'ops-copy.txt', {}))).status).toBe(200);
    expect((await sdk(at(b).bm.move(B, 'ops-copy.txt', B, 'ops-moved.txt', {}))).status).toBe(200);
    expect((await get(a, 'ops-copy.txt')).status).toBe(404);
    expect((await get(a, 'ops-moved.txt')).body.equals(content)).toBe(true);
    const ops = [
      qiniu.rs.statOp(B, 'ops.txt'),
      qiniu.rs.copyOp(B, 'ops.txt', B, 'ops-batch.txt'),
      qiniu.rs.deleteOp(B, 'ops-moved.txt'),
      qiniu.rs.statOp(B, 'missing.txt'),
    ];
    const batch = await sdk<Array<{ code: number }>>(at(b).bm.batch(ops));
    expect(batch.data.map((r) => r.code)).toEqual([200, 200, 200, 612]);
    expect((await sdk(at(a).bm.stat(B, 'ops-batch.txt'))).status).toBe(200);
    expect((await sdk(at(a).bm.delete(B, 'ops-batch.txt'))).status).toBe(200);
    expect((await sdk(at(b).bm.stat(B, 'ops-batch.txt'))).status).toBe(612);
    expect((await get(b, 'ops-moved.txt')).status).toBe(404);
  });

  it('lists with markers handed from one node to the other', async () => {
    const keys = Array.from({ length: 7 }, (_, i) => `list/${String(i).padStart(2, '0')}`);
    for (const [i, key] of keys.entries()) expect((await formPut(i % 2 ? a : b, key, Buffer.from(key))).status).toBe(200);
    const seen: string[] = [];
    let marker: string | undefined;
    for (let page = 0; page < 10; page++) {
      const node = page % 2 ? b : a;
      const r = await sdk<{ items: Array<{ key: string }>; marker?: string }>(
        at(node).bm.listPrefix(B, { prefix: 'list/', limit: 3, ...(marker ? { marker } : {}) }),
      );
      expect(r.status).toBe(200);
      seen.push(...r.data.items.map((it) => it.key));
      marker = r.data.marker;
      if (!marker) break;
    }
    expect(seen).toEqual(keys);
  });

  it('an image fop on a photo uploaded through the other node', async () => {
    const photo = await readFile(join(FIXTURE_IMAGES, 'gps_DSCN0010.jpg'));
    expect((await formPut(a, 'photo.jpg', photo)).status).toBe(200);
    const res = await fetch(`${b.url}/${B}/photo.jpg?imageView2/2/w/120`);
    expect(res.status).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect(meta.width).toBe(120);
  });

  it('a pfop job submitted to A is followed on B (prefop) and its output read on A', async () => {
    const s = at(a);
    const om = new qiniu.fop.OperationManager(s.mac, s.config);
    const fops = [`imageView2/2/w/64|${saveas(B, 'photo-64.jpg')}`];
    const id = await new Promise<string>((resolve, reject) =>
      om.pfop(B, 'photo.jpg', fops, '', {}, (err, body) => (err ? reject(err) : resolve(body?.persistentId ?? ''))),
    );
    expect(id).not.toBe('');
    let record: PrefopRecord | undefined;
    // prefop is how a client learns a job's end (no event reaches it): a bounded poll on the other node.
    await waitUntil(
      async () => {
        const r = await fetch(`${b.url}/status/get/prefop?id=${encodeURIComponent(id)}`);
        record = (await r.json()) as PrefopRecord;
        return record.code !== 1 && record.code !== 2;
      },
      'the pfop job ends',
      30_000,
    );
    expect(record).toMatchObject({ id, code: 0 });
    const out = await get(a, 'photo-64.jpg');
    expect(out.status).toBe(200);
    expect((await sharp(out.body).metadata()).width).toBe(64);
  });

  it('an async fetch submitted to A is reported done by B and stored', async () => {
    const body = seededBytes('origin', 200 * KiB);
    origin.route('/remote.bin', serveBytes(body, 'application/octet-stream'));
    const submitted = await signedJson(a.url, at(a).mac, 'POST', '/sisyphus/fetch', { url: `${origin.base}/remote.bin`, bucket: B, key: 'fetched.bin' });
    expect(submitted.status).toBe(200);
    const id = String(submitted.data.id);
    let state: Record<string, unknown> = {};
    await waitUntil(
      async () => {
        state = (await signedJson(b.url, at(b).mac, 'GET', `/sisyphus/fetch?id=${encodeURIComponent(id)}`)).data;
        return state.state === 'done' || state.state === 'failed';
      },
      'the fetch task ends',
      30_000,
    );
    expect(state.state).toBe('done');
    expect(sha1((await get(b, 'fetched.bin')).body)).toBe(sha1(body));
  });

  it('bucket settings set on A hold on B: maxAge and a lifecycle rule', async () => {
    expect((await sdk(at(a).bm.putBucketMaxAge(B, { maxAge: 1234 }))).status).toBe(200);
    expect((await get(b, 'small.bin')).headers.get('cache-control')).toContain('max-age=1234');
    const rule = { name: 'tmp_expiry', prefix: 'tmp/', delete_after_days: 7 };
    const added = await sdk(at(a).bm.putBucketLifecycleRule(B, rule));
    expect(added.status, JSON.stringify(added.data)).toBe(200);
    const rules = await sdk<Array<{ name: string; prefix: string; delete_after_days: number }>>(at(b).bm.getBucketLifecycleRule(B));
    expect(rules.data).toEqual([expect.objectContaining(rule)]);
  });

  it('an account key created on A is accepted by B within seconds; a domain bound on A is served by B', async () => {
    const c = new ConsoleClient(consoleA);
    expect((await c.signIn(root.accessKey, root.secretKey)).status).toBe(200);
    const created = await c.call<{ accessKey: string; secretKey: string }>('POST', '/api/keys');
    expect(created.status).toBe(200);
    const account = created.body;
    // B holds the keys in memory and reloads them when the shared change counter moves.
    await waitUntil(async () => (await sdk(sdkOn(b, account).bm.listBucket())).status === 200, 'B accepts the new key', 5000);
    expect((await sdk(sdkOn(b, account).bm.createBucket('account-bucket', { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk<string[]>(sdkOn(a, account).bm.listBucket())).data).toEqual(['account-bucket']);

    expect((await c.call('POST', `/api/buckets/${B}/domains`, { domain: 'cdn.cluster.test' })).status).toBe(204);
    const viaDomain = (): Promise<RawResponse> => rawRequest({ port: b.port, path: '/small.bin', headers: { host: 'cdn.cluster.test' } });
    await waitUntil(async () => (await viaDomain()).status === 200, 'B serves the bound domain', 5000);
    expect((await viaDomain()).body.equals(seededBytes('small', 4 * KiB))).toBe(true);
  });
});
