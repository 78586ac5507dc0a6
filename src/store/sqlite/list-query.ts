/**
 * The listing query of the SQLite MetaStore (protocol.md §8.3), served from the (bucket, key) primary key.
 */
import type Database from 'better-sqlite3';
import type { ListPage, ListQuery } from '../meta.js';

/** One page of a listing. */
export function listPage(_db: Database.Database, _query: ListQuery): ListPage {
  return { entries: [], more: false };
}
