/**
 * Garbage collection deletes only proven garbage, and a node whose metadata and blob store do not belong together
 * does not start (store/deployment.ts, objects/blobs.ts, cli/gc.ts). On the real server and real stores: the data
 * dir's SQLite and blob files here; PostgreSQL and radosgw for the cluster case.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import pino from 'pino';
import qiniu from 'qiniu';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startGranary } from '../../src/main.js';
import { startClusterBackend } from '../helpers/cluster.js';
import { runCliWith } from '../helpers/cluster.js';
import { seededBytes } from '../helpers/files.js';
import { total } from '../helpers/metrics.js';
import { parseMetrics } from '../helpers/metrics.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectStored } from '../helpers/upload.js';

const BUCKET = 'kept';
/** Larger than the inline limit: every object here is a blob file (or S3 object). */
const SIZE = 100_000;

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'granary-deployment-'));
  dirs.push(d);
  return d;
}

/** Blob file names under `<dir>/blobs` (32 hex), sorted. */
async function blobFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(dir, 'blobs'), { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && /^[0-9a-f]{32}$/.test(e.name)).map((e) => e.name).sort();
}

async function upload(s: TestServer, key: string, body: Buffer): Promise<void> {
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  const r = await sdk(up.put(s.uploadToken({ scope: BUCKET }), key, body, new qiniu.form_up.PutExtra()));
  expect(r.status).toBe(200);
}

/** A data dir with `n` objects uploaded by a server that has stopped since; returns the object bodies. */
async function filledDataDir(dir: string, n: number): Promise<Map<string, Buffer>> {
  const s = await startTestServer({ GRANARY_DATA_DIR: dir, GRANARY_CONSOLE_PORT: '0' });
  const bodies = new Map<string, Buffer>();
  try {
    await createBucket(s, BUCKET);
    for (let i = 0; i < n; i++) {
      const body = seededBytes(`obj-${i}`, SIZE);
      await upload(s, `obj-${i}.bin`, body);
      bodies.set(`obj-${i}.bin`, body);
    }
  } finally {
    await s.stop();
  }
  return bodies;
}

/** Starts a server on `dir` expecting a refusal; resolves with its message. */
async function refusedStart(env: Record<string, string>): Promise<string> {
  const config = loadConfig({ GRANARY_PORT: '0', GRANARY_HOST: '127.0.0.1', GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_CONSOLE_PORT: '0', GRANARY_S3_PORT: '0', ...env });
  const err = await startGranary(config, { logger: pino({ level: 'silent' }) }).then(
    async (r) => {
      await r.close();
      return undefined;
    },
    (e: unknown) => e as Error,
  );
  expect(err, 'the start was refused').toBeInstanceOf(Error);
  expect(err?.name).toBe('DeploymentMismatch');
  return err?.message ?? '';
}

/** A pino logger whose lines tests can wait for. */
function capturingLogger(): { logger: pino.Logger; line(msg: RegExp): Promise<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{ re: RegExp; resolve: (l: Record<string, unknown>) => void }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) {
        const l = JSON.parse(text) as Record<string, unknown>;
        lines.push(l);
        for (const w of waiters) if (w.re.test(String(l.msg))) w.resolve(l);
      }
      done();
    },
  });
  return {
    logger: pino({ level: 'info' }, sink),
    line: (re) =>
      new Promise((resolve) => {
        const seen = lines.find((l) => re.test(String(l.msg)));
        if (seen) resolve(seen);
        else waiters.push({ re, resolve });
      }),
  };
}

describe('a data dir whose metadata is gone', () => {
  it('a missing meta.db beside existing blobs: the start is refused and every blob is kept', async () => {
    const dir = await tempDir();
    await filledDataDir(dir, 5);
    const before = await blobFiles(dir);
    expect(before).toHaveLength(5);
    for (const f of ['meta.db', 'meta.db-wal', 'meta.db-shm']) await unlink(join(dir, f)).catch(() => undefined);
    const message = await refusedStart({ GRANARY_DATA_DIR: dir });
    expect(message).toMatch(/blob store \(files .*blobs\) belongs to deployment [0-9a-f]{32} but the metadata \(SQLite .*meta\.db\) carries no deployment id/);
    expect(message).toMatch(/Nothing was changed/);
    expect(await blobFiles(dir)).toEqual(before);
  });

  it('an empty meta.db beside blobs of a version without deployment ids: refused, nothing deleted', async () => {
    const dir = await tempDir();
    await filledDataDir(dir, 3);
    const before = await blobFiles(dir);
    // As a data dir of an earlier version (no marker), whose meta.db was then replaced by an empty file.
    await unlink(join(dir, 'blobs', 'deployment.json'));
    for (const f of ['meta.db-wal', 'meta.db-shm']) await unlink(join(dir, f)).catch(() => undefined);
    await writeFile(join(dir, 'meta.db'), '');
    const message = await refusedStart({ GRANARY_DATA_DIR: dir });
    expect(message).toMatch(/holds blobs but the metadata \(SQLite .*\) references none/);
    expect(await blobFiles(dir)).toEqual(before);
  });

  it("another data dir's metadata: refused naming both deployments", async () => {
    const [a, b] = [await tempDir(), await tempDir()];
    await filledDataDir(a, 1);
    await filledDataDir(b, 1);
    const before = await blobFiles(b);
    await copyFile(join(a, 'meta.db'), join(b, 'meta.db'));
    for (const f of ['meta.db-wal', 'meta.db-shm']) await unlink(join(b, f)).catch(() => undefined);
    const message = await refusedStart({ GRANARY_DATA_DIR: b });
    expect(message).toMatch(/belongs to deployment ([0-9a-f]{32}) but the blob store .* belongs to deployment (?!\1)[0-9a-f]{32}/);
    expect(await blobFiles(b)).toEqual(before);
  });

  it('a data dir of a version without deployment ids is adopted at its first start, its objects intact', async () => {
    const dir = await tempDir();
    const bodies = await filledDataDir(dir, 2);
    // As written by a version without deployment ids: neither the marker nor the setting.
    await unlink(join(dir, 'blobs', 'deployment.json'));
    const db = new Database(join(dir, 'meta.db'));
    db.prepare("DELETE FROM settings WHERE name = 'deployment_id'").run();
    db.close();
    const ids = runCliWith(['deployment', '--data-dir', dir], {});
    expect(ids.status).toBe(1);
    const s = await startTestServer({ GRANARY_DATA_DIR: dir, GRANARY_CONSOLE_PORT: '0' });
    try {
      for (const [key, body] of bodies) await expectStored(s, BUCKET, key, body);
    } finally {
      await s.stop();
    }
    const after = runCliWith(['deployment', '--data-dir', dir], {});
    expect(after.status).toBe(0);
    const [metaLine, blobLine] = after.stdout.trim().split('\n');
    expect(metaLine?.split('\t')[2]).toMatch(/^[0-9a-f]{32}$/);
    expect(blobLine?.split('\t')[2]).toBe(metaLine?.split('\t')[2]);
  });
});

describe('orphaned blobs are reported and kept; granary gc removes them on order', () => {
  it('report at start (log, metric), --dry-run lists, gc removes only the orphan', async () => {
    const dir = await tempDir();
    const bodies = await filledDataDir(dir, 3);
    const referenced = await blobFiles(dir);
    // An orphan: a sealed blob no entry references (an upload that died before its commit), two days old.
    const orphan = randomBytes(16).toString('hex');
    const orphanDir = join(dir, 'blobs', orphan.slice(0, 2), orphan.slice(2, 4));
    await mkdir(orphanDir, { recursive: true });
    await writeFile(join(orphanDir, orphan), seededBytes('orphan', SIZE));
    const old = new Date(Date.now() - 2 * 86_400_000);
    await utimes(join(orphanDir, orphan), old, old);

    const log = capturingLogger();
    const s = await startTestServer({ GRANARY_DATA_DIR: dir }, log.logger);
    try {
      const warned = await log.line(/no metadata references were found and kept/);
      expect(warned.orphans).toBe(1);
      expect(warned.sample).toEqual([orphan]);
      const scraped = parseMetrics(await (await fetch(`${s.consoleUrl}/metrics`)).text());
      expect(total(scraped, 'granary_orphan_blobs')).toBe(1);
      expect(await blobFiles(dir)).toContain(orphan);

      // The explicit command, while the server runs: the dry run lists and keeps; gc removes the orphan only.
      const dry = runCliWith(['gc', '--dry-run', '--data-dir', dir], {});
      expect(dry.status, dry.stderr).toBe(0);
      expect(dry.stdout).toContain(`orphan\t${orphan}`);
      expect(dry.stdout).toMatch(/^1 orphaned blobs in files .* \(nothing removed/m);
      expect(await blobFiles(dir)).toContain(orphan);
      const gc = runCliWith(['gc', '--json', '--data-dir', dir], {});
      expect(gc.status, gc.stderr).toBe(0);
      expect(JSON.parse(gc.stdout)).toEqual({ dryRun: false, orphans: 1, removed: 1, failed: 0 });
      expect(await blobFiles(dir)).toEqual(referenced);
      for (const [key, body] of bodies) await expectStored(s, BUCKET, key, body);
    } finally {
      await s.stop();
    }
  });

  it('a blob younger than the oldest live process is never counted (it may be an upload about to commit)', async () => {
    const dir = await tempDir();
    await filledDataDir(dir, 1);
    const s = await startTestServer({ GRANARY_DATA_DIR: dir, GRANARY_CONSOLE_PORT: '0' });
    try {
      const fresh = randomBytes(16).toString('hex');
      const d = join(dir, 'blobs', fresh.slice(0, 2), fresh.slice(2, 4));
      await mkdir(d, { recursive: true });
      await writeFile(join(d, fresh), 'staged by a live upload');
      expect((await stat(join(d, fresh))).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
      const gc = runCliWith(['gc', '--json', '--data-dir', dir], {});
      expect(gc.status, gc.stderr).toBe(0);
      expect(JSON.parse(gc.stdout)).toMatchObject({ orphans: 0, removed: 0 });
      expect(await blobFiles(dir)).toContain(fresh);
    } finally {
      await s.stop();
    }
  });
});

describe('a cluster node started without GRANARY_METADATA', () => {
  it("is refused against the cluster's S3 bucket, and nothing is deleted", async () => {
    const backend = await startClusterBackend();
    try {
      const node = await startTestServer({ ...backend.env, GRANARY_DATA_DIR: await tempDir(), GRANARY_CONSOLE_PORT: '0' });
      const bodies = new Map<string, Buffer>();
      try {
        await createBucket(node, BUCKET);
        for (let i = 0; i < 4; i++) {
          const body = seededBytes(`s3-${i}`, SIZE);
          await upload(node, `s3-${i}.bin`, body);
          bodies.set(`s3-${i}.bin`, body);
        }
      } finally {
        await node.stop();
      }
      const client = backend.s3.client();
      const bucket = /^s3:\/\/([^/]+)\//.exec(backend.env.GRANARY_BLOBS ?? '')?.[1] ?? '';
      const keys = async (): Promise<string[]> =>
        ((await client.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map((o) => o.Key ?? '').sort();
      const before = await keys();
      expect(before.filter((k) => /granary\/[0-9a-f]{32}$/.test(k))).toHaveLength(4);
      expect(before).toContain('granary/granary-deployment.json');

      // The third node: same blobs and credentials, GRANARY_METADATA forgotten (a fresh SQLite in its data dir).
      const { GRANARY_METADATA: _forgotten, ...withoutMetadata } = backend.env;
      const message = await refusedStart({ ...withoutMetadata, GRANARY_DATA_DIR: await tempDir() });
      expect(message).toMatch(/blob store \(S3 s3:\/\/.*\) belongs to deployment [0-9a-f]{32} but the metadata \(SQLite .*\) carries no deployment id/);
      expect(await keys()).toEqual(before);

      // The healthy configuration still serves every object.
      const again = await startTestServer({ ...backend.env, GRANARY_DATA_DIR: await tempDir(), GRANARY_CONSOLE_PORT: '0' });
      try {
        for (const [key, body] of bodies) await expectStored(again, BUCKET, key, body);
      } finally {
        await again.stop();
      }
      client.destroy();
    } finally {
      await backend.stop();
    }
  }, 180_000);
});
