/**
 * The MetaStore implementations the contract tests run against: the embedded SQLite (a temp dir) and PostgreSQL
 * (a throw-away server, test/helpers/pg-server.ts, one per test file, a new database per `fresh()`). Use:
 *
 *   const kinds = metaStoreKinds();          // at the top of the file: registers beforeAll/afterAll
 *   describe.each(kinds.names)('%s', (kind) => {
 *     test('…', async () => { const [a, b] = await kinds.fresh(kind, 2); … });
 *   });
 *
 * `fresh(kind, n, owners?)` opens `n` stores on one new database (n > 1: several processes sharing it, like worker
 * processes or cluster nodes), each with its owner identity; all are closed after the file. PostgreSQL databases are
 * copies of one database migrated once per file (`CREATE DATABASE … TEMPLATE`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { MetaStore } from '../../src/ports/meta.js';
import { PgDb } from '../../src/store/postgres/db.js';
import { migrate } from '../../src/store/postgres/migrations.js';
import { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { startPgServer, type PgTestServer } from './pg-server.js';

export type MetaStoreKind = 'sqlite' | 'postgres';

export interface MetaStoreKinds {
  names: MetaStoreKind[];
  /** `n` stores (default 1) sharing one new database of `kind`; `owners[i]` is store i's process identity. */
  fresh(kind: MetaStoreKind, n?: number, owners?: string[]): Promise<MetaStore[]>;
}

/** Registers the servers' set-up and tear-down for the calling test file (call at its top level). */
export function metaStoreKinds(names: MetaStoreKind[] = ['sqlite', 'postgres']): MetaStoreKinds {
  let pg: PgTestServer | undefined;
  const dirs: string[] = [];
  const open: MetaStore[] = [];
  /** The migrated database new ones are copied from. */
  const TEMPLATE = 'granary_template';
  beforeAll(async () => {
    if (!names.includes('postgres')) return;
    pg = await startPgServer({ volatile: true });
    const db = new PgDb(await pg.createDatabase(TEMPLATE));
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
  }, 60_000);
  afterAll(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => undefined);
    await pg?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  return {
    names,
    async fresh(kind, n = 1, owners = []) {
      const stores: MetaStore[] = [];
      if (kind === 'sqlite') {
        const dir = await mkdtemp(join(tmpdir(), 'granary-meta-'));
        dirs.push(dir);
        for (let i = 0; i < n; i++) stores.push(new SqliteMetaStore(join(dir, 'meta.db'), owners[i]));
      } else {
        if (!pg) throw new Error('postgres was not set up for this file');
        const url = await pg.createDatabase(undefined, TEMPLATE);
        for (let i = 0; i < n; i++) stores.push(await PgMetaStore.open(url, owners[i]));
      }
      open.push(...stores);
      return stores;
    },
  };
}
