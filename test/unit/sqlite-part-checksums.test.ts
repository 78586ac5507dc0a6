/**
 * The SQLite store's migration of multipart parts' S3 checksum column (store/sqlite/schema.ts ADDED_COLUMNS,
 * `parts.checksum`): a data dir of an earlier version, whose `parts` table has no such column and holds a part,
 * opens, keeps that part (no checksum), and records checksums from then on.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('a parts table of an earlier version gains the checksum column at open; its parts are kept', async () => {
  dir = await mkdtemp(join(tmpdir(), 'part-checksums-'));
  const path = join(dir, 'meta.db');
  let store = new SqliteMetaStore(path);
  await store.sessions.createUpload({ id: 'u', accessKey: 'ak', bucket: 'b', createdAt: 1, expiresAt: 2 ** 31 });
  await store.sessions.putPart('u', { partNumber: 1, blobId: 'blob-1', size: 5, md5: 'm', etag: 'e1', putTime: 1 });
  await store.close();
  // Make it look like a data dir written before the column existed.
  const raw = new Database(path);
  raw.exec('ALTER TABLE parts DROP COLUMN checksum');
  raw.close();
  store = new SqliteMetaStore(path);
  expect(await store.sessions.listParts('u', 0, 10)).toEqual([{ partNumber: 1, blobId: 'blob-1', size: 5, md5: 'm', etag: 'e1', putTime: 1 }]);
  await store.sessions.putPart('u', { partNumber: 2, blobId: 'blob-2', size: 5, md5: 'm', etag: 'e2', putTime: 1, checksum: 'crc32:AAAAAA==' });
  expect((await store.sessions.listParts('u', 1, 10))[0]?.checksum).toBe('crc32:AAAAAA==');
  await store.close();
});
