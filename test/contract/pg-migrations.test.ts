/**
 * The PostgreSQL MetaStore's schema migrations (src/store/postgres/migrations.ts) on a real throw-away PostgreSQL:
 * applied once and in order, idempotent when nodes start together, refused when the database is newer than the
 * code; and the schema's own rules (byte-order keys, sharded usage counters, change counters).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PgDb } from '../../src/store/postgres/db.js';
import { migrate } from '../../src/store/postgres/migrations.js';
import { MIGRATIONS } from '../../src/store/postgres/schema.js';
import { startPgServer, type PgTestServer } from '../helpers/pg-server.js';

let server: PgTestServer;
beforeAll(async () => {
  server = await startPgServer();
});
afterAll(async () => {
  await server?.stop();
});

describe('PostgreSQL migrations', () => {
  test('nodes starting together apply each migration once', async () => {
    const url = await server.createDatabase();
    const nodes = [new PgDb(url), new PgDb(url), new PgDb(url)];
    const applied = await Promise.all(nodes.map((db) => migrate(db)));
    expect(applied.flat().sort()).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await migrate(nodes[0]!)).toEqual([]);
    const { rows } = await nodes[0]!.query<{ version: number }>('SELECT version FROM granary_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    await Promise.all(nodes.map((db) => db.close()));
  });

  test('a database migrated by a newer Granary is refused', async () => {
    const db = new PgDb(await server.createDatabase());
    await migrate(db);
    await db.query("INSERT INTO granary_migrations (version, name) VALUES (9999, 'from the future')");
    await expect(migrate(db)).rejects.toThrow(/9999.*upgrade Granary/);
    await db.close();
  });

  test('a failing migration leaves nothing behind and names itself', async () => {
    const db = new PgDb(await server.createDatabase());
    const bad = [...MIGRATIONS, { version: 1000, name: 'broken', sql: 'CREATE TABLE half (a int); SELECT nope;' }];
    await expect(migrate(db, bad)).rejects.toThrow(/migration 1000 \(broken\) failed/);
    const half = await db.query("SELECT to_regclass('half') AS t");
    expect(half.rows[0]!.t).toBeNull();
    await db.close();
  });

  test('keys order by bytes, usage sums its shards, key and domain changes are counted', async () => {
    const db = new PgDb(await server.createDatabase());
    await migrate(db);
    await db.query("INSERT INTO buckets (name, region, ctime) VALUES ('b', 'z0', 1)");
    const keys = ['a', 'B', 'é', 'z', '中', 'a/b', 'a0'];
    for (const [i, key] of keys.entries()) {
      await db.query(
        "INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time) VALUES ('b', $1, 'x', $2, 'h', 'm', 't', $3)",
        [key, i + 1, 17_000_000_000_000_000n + BigInt(i)],
      );
    }
    const listed = (await db.query<{ key: string }>("SELECT key FROM objects WHERE bucket = 'b' ORDER BY key")).rows;
    expect(listed.map((r) => r.key)).toEqual([...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
    const put = await db.query<{ put_time: bigint }>("SELECT put_time FROM objects WHERE key = 'a'");
    expect(put.rows[0]!.put_time).toBe(17_000_000_000_000_000n);
    await db.query("DELETE FROM objects WHERE key = 'z'");
    await db.query("UPDATE objects SET fsize = 100 WHERE key = 'a'");
    const usage = await db.query<{ bytes: number; count: number }>(
      "SELECT SUM(bytes) AS bytes, SUM(count) AS count FROM bucket_usage WHERE bucket = 'b'",
    );
    // 1..7 = 28, minus z (4), a 1 → 100.
    expect(usage.rows[0]).toEqual({ bytes: 28 - 4 - 1 + 100, count: 6 });
    await db.query("INSERT INTO domains (domain, bucket, ctime) VALUES ('d.example', 'b', 1)");
    await db.query("INSERT INTO access_keys (access_key, secret_key, ctime) VALUES ('ak', 'sk', 1)");
    await db.query("DELETE FROM access_keys WHERE access_key = 'ak'");
    const counters = await db.query<{ topic: string; n: bigint }>('SELECT topic, n FROM change_counters ORDER BY topic');
    expect(counters.rows).toEqual([
      { topic: 'access_keys', n: 2n },
      { topic: 'domains', n: 1n },
      // IAM changes (migration 6): counted by their own topic, untouched by these.
      { topic: 'iam', n: 0n },
    ]);
    await db.query('DELETE FROM objects');
    await db.query("DELETE FROM domains");
    await db.query("DELETE FROM buckets WHERE name = 'b'");
    expect((await db.query('SELECT * FROM bucket_usage')).rows).toEqual([]);
    await db.close();
  });
});
