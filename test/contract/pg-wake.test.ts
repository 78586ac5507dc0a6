/**
 * Wake-ups across nodes on a real PostgreSQL (src/store/postgres/wake.ts and the `granary_wake` triggers of
 * schema.ts): the LISTEN connection survives `pg_terminate_backend`, a database refusing connections for a
 * while (its version keeps moving while it is down, it reconnects, and notifications move it again afterwards)
 * and a server process that stops answering without closing the connection (SIGSTOP: found by the heartbeat);
 * and only statements that change rows notify, so idle nodes looking for work do not wake each other.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MetaStore } from '../../src/ports/meta.js';
import { PgDb } from '../../src/store/postgres/db.js';
import { migrate } from '../../src/store/postgres/migrations.js';
import { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { PgWakeListener, WAKE_CHANNEL } from '../../src/store/postgres/wake.js';
import { startPgServer, type PgTestServer } from '../helpers/pg-server.js';
import { until } from '../helpers/queue-fixtures.js';

let server: PgTestServer;
let admin: pg.Client;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startPgServer();
  admin = new pg.Client({ connectionString: server.url }); // the maintenance database: never refused below
  await admin.connect();
}, 60_000);
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => undefined);
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** A migrated database, a pool on it, and a wake listener with short back-offs. */
async function setUp(errors: unknown[] = [], heartbeatMs = 15_000): Promise<{ name: string; db: PgDb; wake: PgWakeListener }> {
  const url = await server.createDatabase();
  const db = new PgDb(url);
  await migrate(db);
  const wake = await PgWakeListener.open(url, {
    retryMinMs: 20,
    retryMaxMs: 200,
    disconnectedPollMs: 20,
    heartbeatMs,
    heartbeatTimeoutMs: Math.min(heartbeatMs * 4, 10_000),
    onError: (err) => errors.push(err),
  });
  cleanup.push(() => db.close(), () => wake.close());
  return { name: new URL(url).pathname.slice(1), db, wake };
}

/** Makes a change that notifies (a new lease row). */
const touch = (db: PgDb, name: string) =>
  db.query('INSERT INTO leases (name, owner, expires_ms, acquired_ms) VALUES ($1, $2, 1, 0)', [name, 'test']);

describe('the wake-up listener', () => {
  it('counts notifications of committed changes', async () => {
    const { db, wake } = await setUp();
    const before = wake.version();
    await touch(db, 'one');
    await until(() => wake.version() > before, 'the notification arrives');
  });

  it('survives pg_terminate_backend of its connection: reconnects, and notifications move it again', async () => {
    const errors: unknown[] = [];
    const { db, wake } = await setUp(errors);
    const pid = wake.backendPid();
    expect(pid).toBeTypeOf('number');
    const { rows } = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
    expect(rows[0]?.ok).toBe(true);
    await until(() => wake.connected && wake.backendPid() !== pid, 'the listener reconnects');
    expect(errors.length).toBeGreaterThan(0); // the lost connection was reported, not thrown
    const before = wake.version();
    await touch(db, 'after-reconnect');
    await until(() => wake.version() > before, 'a notification after the reconnection arrives');
  });

  it('while the database refuses connections its version keeps moving; it reconnects once they are allowed', async () => {
    const errors: unknown[] = [];
    const { name, db, wake } = await setUp(errors);
    await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
    cleanup.push(() => admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS true`));
    await admin.query('SELECT pg_terminate_backend($1)', [wake.backendPid()]);
    await until(() => !wake.connected, 'the listener sees its connection gone');
    const down = wake.version();
    await until(() => wake.version() >= down + 3 && errors.length >= 3, 'the version moves and reconnections fail');
    expect(wake.connected).toBe(false);
    await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS true`);
    await until(() => wake.connected, 'the listener reconnects');
    const before = wake.version();
    await touch(db, 'back');
    await until(() => wake.version() > before, 'notifications arrive again');
  });

  it('finds a connection whose server process stopped answering (heartbeat) and moves to a new one', async () => {
    const errors: unknown[] = [];
    const { db, wake } = await setUp(errors, 50);
    const pid = wake.backendPid()!;
    process.kill(pid, 'SIGSTOP'); // the TCP connection stays open; nothing answers on it
    cleanup.push(async () => process.kill(pid, 'SIGCONT'));
    await until(() => wake.connected && wake.backendPid() !== pid, 'the listener moves to a new connection');
    expect(String(errors[0])).toMatch(/timeout/i);
    const before = wake.version();
    await touch(db, 'after-stall');
    await until(() => wake.version() > before, 'notifications arrive on the new connection');
  });
});

describe('notifications', () => {
  it('come only from statements that change rows: an idle node looking for work wakes nobody', async () => {
    const url = await server.createDatabase();
    const node = await PgMetaStore.open(url, 'host:1:idle');
    const listener = new pg.Client({ connectionString: url });
    cleanup.push(() => node.close(), () => listener.end());
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (m) => {
      if (m.channel === WAKE_CHANNEL) heard.push(m.payload ?? '');
    });
    await listener.query(`LISTEN ${WAKE_CHANNEL}`);
    const idle = async (m: MetaStore) => {
      await m.jobs.claim('0.default', 1);
      await m.jobs.claimNotifying(1);
      await m.jobs.requeueAbandoned(1);
      await m.fetchTasks.claim(1);
      await m.fetchTasks.requeueAbandoned(1);
      await m.fetchTasks.prune(1);
      await m.events.claim(1);
      await m.events.requeueAbandoned(1);
      await m.leases.renew('nothing', 'nobody', 1, 1);
      await m.leases.releaseAll('nobody');
    };
    await idle(node);
    // A change afterwards: notifications arrive in commit order, so any from the idle looks would come first.
    await node.fetchTasks.enqueue({ id: 't', accessKey: 'ak', request: '{}', createdMs: 1 });
    await until(() => heard.length > 0, 'the notification of the enqueue');
    expect(heard).toEqual(['tasks']);
  });
});
