/**
 * `granary migrate --data-dir` end to end: an embedded data dir filled through a real Granary (official
 * SDK: form uploads small → inline and 1 MiB, resumable v1 9 MiB → a manifest, v2 with 5 MiB parts → a 0x9e etag,
 * copies sharing a blob, chgm/chtype/deleteAfterDays, bucket settings, a bound domain, an account key, a pipeline,
 * a workflow template, the generated root key pair in credentials.json, and one object whose blob file is then
 * corrupted) is migrated by the CLI subprocess into a real PostgreSQL (test/helpers/pg-server.ts) and a real
 * radosgw (test/helpers/s3-server.ts). The first run is SIGKILLed mid-way, a second finishes it, a third finds
 * everything there. Then a Granary on the destination answers every object byte-exact with an identical stat
 * (hash, fsize, mimeType, putTime, type, meta, …), the same listings and bucket settings, and the keys, domain,
 * pipeline and template work there.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { setStyle } from '../../src/buckets/styles.js';
import { putPipeline } from '../../src/jobs/pipelines.js';
import type { MigrationReport } from '../../src/migrate/report.js';
import { isInlineBlobId } from '../../src/ports/inline-blob-id.js';
import { isManifestId } from '../../src/ports/manifest.js';
import { blobPath, flipByte } from '../helpers/bitrot.js';
import { seededBytes, writeSeededFile } from '../helpers/files.js';
import { BIN } from '../helpers/cli.js';
import { rawRequest, signedFetch } from '../helpers/http.js';
import { startPgServer, type PgTestServer } from '../helpers/pg-server.js';
import { startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, readAnswer } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const DOMAIN = 'cdn.migrate.test';

let pg: PgTestServer;
let s3: S3TestServer;
let pgUrl: string;
let s3Bucket: string;
let work: string;
let srcDir: string;

/** What the source answered before the migration, per `bucket/key`: stat and bytes. */
const objects = new Map<string, { stat: Record<string, unknown>; bytes: Buffer }>();
/** Source answers of bucket-level calls, by a name, compared with the destination's. */
const bucketAnswers = new Map<string, unknown>();
let accountKey: { accessKey: string; secretKey: string };

beforeAll(async () => {
  [pg, s3] = await Promise.all([startPgServer(), startS3Server()]);
  pgUrl = await pg.createDatabase('migrated');
  s3Bucket = await s3.createBucket();
  work = await mkdtemp(join(tmpdir(), 'granary-migrate-'));
  srcDir = join(work, 'src');
}, 120_000);

afterAll(async () => {
  await Promise.all([pg?.stop(), s3?.stop()]);
  if (work) await rm(work, { recursive: true, force: true });
});

/** The bucket-level answers compared between source and destination. */
async function bucketFacts(s: TestServer): Promise<Map<string, unknown>> {
  const bm = s.bucketManager();
  const out = new Map<string, unknown>();
  for (const b of ['archive', 'photos']) {
    out.set(`${b} info`, (await sdk(bm.getBucketInfo(b))).data);
    out.set(`${b} quota`, (await sdk(bm.getBucketQuota(b))).data);
    out.set(`${b} rules`, (await sdk(bm.getBucketLifecycleRule(b))).data);
    out.set(`${b} events`, (await sdk(bm.getBucketEvent(b))).data);
    out.set(`${b} cors`, (await sdk(bm.getCorsRules(b))).data);
    out.set(`${b} list`, (await sdk(bm.listPrefix(b, { limit: 1000 }))).data);
  }
  return out;
}

/** Stat and bytes (signed URL, the buckets may be private) of every object of `keys`. */
async function snapshot(s: TestServer, keys: string[]): Promise<Map<string, { stat: Record<string, unknown>; bytes: Buffer }>> {
  const bm = s.bucketManager();
  const out = new Map<string, { stat: Record<string, unknown>; bytes: Buffer }>();
  for (const id of keys) {
    const bucket = id.slice(0, id.indexOf('/'));
    const key = id.slice(bucket.length + 1);
    const stat = await sdk<Record<string, unknown>>(bm.stat(bucket, key));
    expect(stat.status, `stat ${id}`).toBe(200);
    const url = bm.privateDownloadUrl(s.url, `${bucket}/${key}`, Math.floor(Date.now() / 1000) + 600);
    const res = await fetch(url.replace(`${s.url}/${bucket}/${key}`, `${s.url}/${encodeURIComponent(bucket)}/${encodeURIComponent(key)}`));
    expect(res.status, `download ${id}`).toBe(200);
    out.set(id, { stat: stat.data, bytes: Buffer.from(await res.arrayBuffer()) });
  }
  return out;
}

/** A child `granary migrate --data-dir …` (bin/granary.js), its JSON lines as they come, and its end. */
function migrate(extra: string[] = []): { lines: AsyncIterable<string>; child: ReturnType<typeof spawn>; exited: Promise<number | string>; stderr: () => string } {
  const env: Record<string, string> = { ...process.env } as Record<string, string>;
  for (const k of Object.keys(env)) if (k.startsWith('GRANARY_')) delete env[k];
  const blobs = s3.granaryEnv(s3Bucket, 'cluster/');
  const child = spawn(
    process.execPath,
    [BIN, 'migrate', '--data-dir', srcDir, '--metadata', pgUrl, '--blobs', blobs.GRANARY_BLOBS as string, '--json', ...extra],
    { env: { ...env, AWS_ACCESS_KEY_ID: blobs.AWS_ACCESS_KEY_ID as string, AWS_SECRET_ACCESS_KEY: blobs.AWS_SECRET_ACCESS_KEY as string }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  return { lines: createInterface({ input: child.stdout as NodeJS.ReadableStream }), child, exited, stderr: () => stderr };
}

/** Runs a migration to its end: the per-object events and the summary. */
async function migrateToEnd(): Promise<{ code: number | string; events: Array<Record<string, unknown>>; summary: MigrationReport }> {
  const run = migrate();
  const events: Array<Record<string, unknown>> = [];
  let summary: MigrationReport | undefined;
  for await (const line of run.lines) {
    const e = JSON.parse(line) as Record<string, unknown>;
    if (e.event === 'summary') summary = e as unknown as MigrationReport;
    else events.push(e);
  }
  const code = await run.exited;
  if (!summary) throw new Error(`no summary (exit ${code}): ${run.stderr()}`);
  return { code, events, summary };
}

describe('granary migrate --data-dir into PostgreSQL + S3', () => {
  it('fills an embedded data dir through Granary', async () => {
    // The generated root pair of an embedded install lives in credentials.json (auth/keys.ts).
    await mkdir(srcDir, { recursive: true });
    await writeFile(join(srcDir, 'credentials.json'), JSON.stringify({ accessKey: AK, secretKey: SK }));
    const s = await startTestServer({ GRANARY_DATA_DIR: srcDir, GRANARY_ACCESS_KEY: '', GRANARY_SECRET_KEY: '' });
    let bad: string;
    try {
      const bm = s.bucketManager();
      for (const b of ['photos', 'archive', 'broken']) await createBucket(s, b);
      // Bucket settings.
      expect((await sdk(bm.putBucketAccessMode('archive', { private: 1 }))).status).toBe(200);
      expect((await sdk(bm.putBucketMaxAge('photos', { maxAge: 600 }))).status).toBe(200);
      expect((await sdk(bm.putCorsRules('photos', [{ allowed_origin: ['https://a.example'], allowed_method: ['GET'], max_age: 60 }]))).status).toBe(200);
      expect((await sdk(bm.putReferAntiLeech('archive', { mode: 1, pattern: 'a.example', norefer: 1 }))).status).toBe(200);
      expect((await sdk(bm.putBucketQuota('photos', { count: 1000, size: 1024 * MiB }))).status).toBe(200);
      expect((await sdk(bm.putBucketLifecycleRule('photos', { name: 'tmp_rule', prefix: 'tmp/', delete_after_days: 30, to_line_after_days: 10 }))).status).toBe(200);
      expect(
        (await sdk(bm.putBucketEvent('photos', { name: 'on_put', event: ['put'], callbackURL: 'http://127.0.0.1:9/hook', prefix: 'hooks/' }))).status,
      ).toBe(200);
      expect((await sdk(bm.putBucketAccessStyleMode('archive', 1))).status).toBe(200);
      await setStyle(s.running.g, 'photos', 'thumb', 'imageView2/1/w/10/h/10');
      await bindDomain(s.running.g, DOMAIN, 'photos');
      accountKey = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
      await putPipeline(s.running.g, 'fast', 3);
      const tpl = await signedFetch(s, { path: '/workflowTemplates/thumbs', body: 'fops=avinfo&pipeline=fast' });
      expect(tpl.status).toBe(200);

      // Objects.
      const form = new qiniu.form_up.FormUploader(s.zoneConfig());
      const put = async (bucket: string, key: string, bytes: Buffer, mime?: string, meta?: Record<string, string>): Promise<void> => {
        const extra = new qiniu.form_up.PutExtra();
        if (mime) extra.mimeType = mime;
        if (meta) extra.metadata = meta;
        const r = await sdk(form.put(s.uploadToken({ scope: bucket }), key, bytes, extra));
        expect(r.status, `put ${bucket}/${key}`).toBe(200);
      };
      await put('photos', 'small.txt', Buffer.from('hello, cluster'), 'text/x-test', { 'x-qn-meta-color': 'red' });
      await put('photos', 'medium.bin', seededBytes('medium', MiB));
      await put('photos', 'tmp/soon.bin', seededBytes('soon', 2000));
      for (let i = 0; i < 24; i++) await put('photos', `many/${String(i).padStart(2, '0')}.bin`, seededBytes(`many-${i}`, i % 2 === 0 ? 3000 : 200_000));
      await put('broken', 'bad.bin', seededBytes('bad', 200_000));
      const file = join(work, 'big.bin');
      await writeSeededFile(file, 9 * MiB, 'big');
      const ru = new qiniu.resume_up.ResumeUploader(s.zoneConfig());
      const v1 = qiniu.resume_up.PutExtra.create('big.bin', undefined, 'video/x-big', undefined, undefined, undefined, 'v1', { 'x-qn-meta-kind': 'v1' });
      expect((await sdk(ru.putFile(s.uploadToken({ scope: 'photos' }), 'big-v1.bin', file, v1))).status).toBe(200);
      const v2 = qiniu.resume_up.PutExtra.create('big.bin', undefined, undefined, undefined, undefined, 5 * MiB, 'v2');
      expect((await sdk(ru.putFile(s.uploadToken({ scope: 'photos' }), 'big-v2.bin', file, v2))).status).toBe(200);
      expect(String((await sdk<{ hash: string }>(bm.stat('photos', 'big-v2.bin'))).data.hash)).toMatch(/^n/);
      // Copies sharing blobs (a manifest and an inline blob), and changed attributes.
      expect((await sdk(bm.copy('photos', 'big-v1.bin', 'archive', 'copy-of-big.bin', {}))).status).toBe(200);
      expect((await sdk(bm.copy('photos', 'small.txt', 'archive', 'small-copy.txt', {}))).status).toBe(200);
      expect((await sdk(bm.changeMime('photos', 'medium.bin', 'application/x-changed'))).status).toBe(200);
      expect((await sdk(bm.changeType('photos', 'medium.bin', 1))).status).toBe(200);
      expect((await sdk(bm.deleteAfterDays('photos', 'many/00.bin', 7))).status).toBe(200);
      // A quota the bucket already exceeds (set after its entries): the migration must still copy them all.
      expect((await sdk(bm.putBucketQuota('archive', { count: 1 }))).status).toBe(200);

      const keys = [
        'photos/small.txt',
        'photos/medium.bin',
        'photos/tmp/soon.bin',
        'photos/big-v1.bin',
        'photos/big-v2.bin',
        'archive/copy-of-big.bin',
        'archive/small-copy.txt',
        ...Array.from({ length: 24 }, (_, i) => `photos/many/${String(i).padStart(2, '0')}.bin`),
      ];
      for (const [k, v] of await snapshot(s, keys)) objects.set(k, v);
      for (const [k, v] of await bucketFacts(s)) bucketAnswers.set(k, v);
      expect(objects.get('photos/tmp/soon.bin')?.stat.expiration).toBeTypeOf('number');
      expect(objects.get('photos/many/00.bin')?.stat.expiration).toBeTypeOf('number');
      expect(isInlineBlobId((await s.running.g.meta.getObject('photos', 'small.txt'))?.blobId ?? '')).toBe(true);
      expect(isManifestId((await s.running.g.meta.getObject('photos', 'big-v1.bin'))?.blobId ?? '')).toBe(true);
      // Bitrot in the source: the bytes no longer match the entry's etag.
      bad = await blobPath(s, 'broken', 'bad.bin');
    } finally {
      await s.stop();
    }
    await flipByte(bad, 1234);
  });

  it('a run SIGKILLed mid-way is finished by the next; a third finds everything there (a chgm since is carried over)', async () => {
    const first = migrate(['--concurrency', '2']);
    let seen = 0;
    for await (const line of first.lines) {
      if ((JSON.parse(line) as { event: string }).event === 'object' && ++seen === 6) {
        first.child.kill('SIGKILL');
        break;
      }
    }
    expect(await first.exited, `the first run ended before the kill: ${first.stderr()}`).toBe('SIGKILL');

    const total = objects.size + 1; // + broken/bad.bin
    const second = await migrateToEnd();
    expect(second.code, 'exit status 1: one etag mismatch').toBe(1);
    const o = second.summary.objects;
    expect(o.mismatched).toBe(1);
    expect(second.summary.problems.map((p) => p.what)).toEqual(['broken:bad.bin']);
    expect(second.summary.problems[0]?.reason).toMatch(/etag .* computed, the entry says/);
    expect(o.failed).toBe(0);
    expect(o.skipped, 'what the killed run committed is skipped').toBeGreaterThanOrEqual(4);
    expect(o.copied + o.skipped + o.updated).toBe(total - 1);
    expect(second.summary.notCopied.join(' ')).toMatch(/job history/);
    expect(second.events.find((e) => e.key === 'bad.bin')).toMatchObject({ action: 'mismatch', bucket: 'broken' });


    // A change at the source after a run (chgm keeps hash and putTime): the next run brings it over.
    const again = await startTestServer({ GRANARY_DATA_DIR: srcDir, GRANARY_ACCESS_KEY: '', GRANARY_SECRET_KEY: '' });
    try {
      expect((await sdk(again.bucketManager().changeMime('photos', 'many/03.bin', 'text/x-later'))).status).toBe(200);
      for (const [k, v] of await snapshot(again, ['photos/many/03.bin'])) objects.set(k, v);
      for (const [k, v] of await bucketFacts(again)) bucketAnswers.set(k, v);
    } finally {
      await again.stop();
    }
    const third = await migrateToEnd();
    expect(third.code).toBe(1);
    expect(third.summary.objects).toMatchObject({ copied: 0, updated: 1, skipped: total - 2, mismatched: 1, bytesCopied: 0 });
    expect(third.events.find((e) => e.key === 'many/03.bin')).toMatchObject({ action: 'updated' });
    expect(third.summary.buckets).toMatchObject({ copied: 0, unchanged: 3, failed: 0 });
    for (const c of ['domains', 'accessKeys', 'pipelines', 'workflowTemplates'] as const) expect(third.summary[c]).toMatchObject({ copied: 0, failed: 0 });
  });

  it('a Granary on the destination serves every object identically, with the settings and keys', async () => {
    const d = await startTestServer({
      GRANARY_DATA_DIR: join(work, 'node'),
      GRANARY_METADATA: pgUrl,
      ...s3.granaryEnv(s3Bucket, 'cluster/'),
      // The root pair comes from the migrated metadata (credentials.json of the source).
      GRANARY_ACCESS_KEY: '',
      GRANARY_SECRET_KEY: '',
    });
    try {
      const now = await snapshot(d, [...objects.keys()]);
      for (const [id, before] of objects) {
        const after = now.get(id);
        expect(after?.stat, `stat of ${id}`).toEqual(before.stat);
        expect(after?.bytes.equals(before.bytes), `bytes of ${id}`).toBe(true);
      }
      const facts = await bucketFacts(d);
      for (const [name, before] of bucketAnswers) expect(facts.get(name), name).toEqual(before);
      expect((await sdk(d.bucketManager().stat('broken', 'bad.bin'))).status).toBe(612);

      // Shapes at the destination: inline stays inline, the manifest is one blob shared by its copy.
      const meta = d.running.g.meta;
      expect(isInlineBlobId((await meta.getObject('photos', 'small.txt'))?.blobId ?? '')).toBe(true);
      const big = await meta.getObject('photos', 'big-v1.bin');
      const copy = await meta.getObject('archive', 'copy-of-big.bin');
      expect(isManifestId(big?.blobId ?? 'm')).toBe(false);
      expect(copy?.blobId).toBe(big?.blobId);
      expect(big?.sums?.crc32.length, 'checksums recorded').toBe(Math.ceil((9 * MiB) / (256 * 1024)) * 4);

      // The bound domain, the max-age setting, the account key, the pipeline, the workflow template.
      const viaDomain = await rawRequest({ port: d.running.port, path: '/small.txt', headers: { Host: DOMAIN } });
      expect(viaDomain.status).toBe(200);
      expect(viaDomain.body.toString()).toBe('hello, cluster');
      const res = await fetch(`${d.url}/photos/medium.bin`);
      expect(res.headers.get('cache-control')).toContain('max-age=600');
      await res.arrayBuffer();
      const account = new qiniu.auth.digest.Mac(accountKey.accessKey, accountKey.secretKey);
      expect((await signedFetch(d, { method: 'GET', path: '/buckets', mac: account })).status).toBe(200);
      const stranger = new qiniu.auth.digest.Mac('nobody', 'nothing');
      expect((await signedFetch(d, { method: 'GET', path: '/buckets', mac: stranger })).status).toBe(401);
      expect(await d.running.g.jobs.getPipeline('fast')).toMatchObject({ concurrency: 3 });
      const tpl = await readAnswer(await signedFetch(d, { method: 'GET', path: '/workflowTemplates/thumbs' }));
      expect(tpl.status).toBe(200);
      expect(tpl.json).toMatchObject({ fops: 'avinfo', pipeline: 'fast' });
    } finally {
      await d.stop();
    }
  });
});
