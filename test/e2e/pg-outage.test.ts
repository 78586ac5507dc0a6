/**
 * Cluster mode when PostgreSQL fails (store/postgres/pg-errors.ts, db.ts timeouts): a Granary process on a
 * PostgreSQL started by this file, with GRANARY_PG_TIMEOUT=2. While the server is stopped (connections refused),
 * and while it is frozen (SIGSTOP of the postmaster and its backends: nothing answers, the hang a dead machine
 * gives), an upload and a stat answer 599 JSON naming the metadata database instead of hanging, /health/ready
 * answers 503 with the database as its reason, and the process keeps running; once PostgreSQL is back, uploads and
 * stats work again without a restart. A hang would show as this file's timeout.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededBytes } from '../helpers/files.js';
import { startPgServer, type PgTestServer } from '../helpers/pg-server.js';
import { AK, sdk, SK } from '../helpers/server.js';
import { freePort, sdkAt, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { waitUntil } from '../helpers/upload.js';

const B = 'outage';
let pg: PgTestServer;
let server: ChildServer;
let dataDir = '';
let api: ReturnType<typeof sdkAt>;

beforeAll(async () => {
  pg = await startPgServer();
  const url = await pg.createDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'granary-pg-outage-'));
  const port = await freePort();
  server = await spawnServer(
    { GRANARY_DATA_DIR: dataDir, GRANARY_METADATA: url, GRANARY_PG_TIMEOUT: '2', GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK },
    port,
  );
  api = sdkAt(port);
  expect((await sdk(api.bm.createBucket(B, { regionId: 'z0' }))).status).toBe(200);
}, 60_000);

afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  await pg?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** A form upload of a 4 KiB object (inline: metadata only) through the SDK. */
function upload(key: string): Promise<{ status: number; data: unknown }> {
  const token = new qiniu.rs.PutPolicy({ scope: B }).uploadToken(api.mac);
  return sdk(new qiniu.form_up.FormUploader(api.config).put(token, key, seededBytes(key, 4096), new qiniu.form_up.PutExtra()));
}

/** The stat of `key` through the SDK. */
function stat(key: string): Promise<{ status: number; data: unknown }> {
  return sdk(api.bm.stat(B, key));
}

async function ready(): Promise<{ status: number; body: { status?: string; reasons?: string[] } }> {
  const res = await fetch(`${server.url}/health/ready`);
  return { status: res.status, body: (await res.json()) as { status?: string; reasons?: string[] } };
}

/** What every request must answer while PostgreSQL is out: 599 JSON naming the metadata database. */
async function expectOutage(key: string): Promise<void> {
  const put = await upload(key);
  expect(put.status).toBe(599);
  expect(put.data).toEqual({ error: expect.stringMatching(/^the metadata database \(PostgreSQL\) failed or did not answer/) });
  const st = await stat('before');
  expect(st.status).toBe(599);
  expect(st.data).toEqual({ error: expect.stringMatching(/^the metadata database \(PostgreSQL\) failed or did not answer/) });
  const health = await ready();
  expect(health.status).toBe(503);
  expect(health.body.status).toBe('unready');
  expect(health.body.reasons?.join('\n')).toMatch(/^database: the metadata database \(PostgreSQL\) failed/m);
  expect(server.child.exitCode).toBeNull();
}

/** Waits until the server is ready again, then checks an upload and a stat work. */
async function expectRecovered(key: string): Promise<void> {
  await waitUntil(async () => (await ready()).status === 200, 'the server is ready again', 30_000);
  expect((await upload(key)).status).toBe(200);
  expect((await stat(key)).status).toBe(200);
  expect((await stat('before')).status).toBe(200);
}

describe('PostgreSQL outages', () => {
  it('stopped: uploads and stats answer 599 JSON, /health/ready 503; all works again once it is back', async () => {
    expect((await upload('before')).status).toBe(200);
    await pg.halt();
    await expectOutage('during-stop');
    await pg.start();
    await expectRecovered('after-stop');
    expect((await stat('during-stop')).status).toBe(612);
  }, 60_000);

  it('frozen (SIGSTOP): the same answers after GRANARY_PG_TIMEOUT instead of a hang; all works again once it thaws', async () => {
    await pg.freeze();
    try {
      await expectOutage('during-freeze');
    } finally {
      await pg.thaw();
    }
    await expectRecovered('after-freeze');
  }, 90_000);
});
