/**
 * The store factory: configuration → the MetaStore and BlobStore implementations (shared by the server, the worker
 * primary and the CLI's offline commands).
 *
 * - Metadata (GRANARY_METADATA): SQLite `<dataDir>/meta.db` (embedded, default) or PostgreSQL (cluster mode: every
 *   node opens the same database; migrations run at open, store/postgres/migrations.ts; pool size and timeouts
 *   GRANARY_PG_POOL, GRANARY_PG_TIMEOUT).
 * - Blobs (GRANARY_BLOBS): files under `<dataDir>/blobs/` (default) or an S3 bucket, with local copies for
 *   ffmpeg/heif-convert under `<dataDir>/blob-cache/<worker slot>/`. Small objects' bytes live in the metadata
 *   database either way (store/inline-blob-store.ts).
 *
 * PostgreSQL with file blobs works for ONE node only: another node cannot read this node's files. Several nodes need
 * GRANARY_BLOBS=s3:// (docs/guides/running-a-cluster.md); `sharedFsBlobsWarning` tells a node that finds itself in that
 * situation.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { BlobStore } from '../ports/blob.js';
import type { MetaStore } from '../ports/meta.js';
import { parseOwner, type ProcessIdentity } from '../workers/identity.js';
import { FsBlobStore } from './fs/fs-blob-store.js';
import { EncryptingBlobStore } from './crypto/encrypting-blob-store.js';
import type { MasterKey } from './crypto/envelope.js';
import { checkMasterKey, masterKeySource, readMasterKey } from './crypto/master-key.js';
import { InlineAwareBlobStore } from './inline-blob-store.js';
import { SqliteMetaStore } from './sqlite/sqlite-meta-store.js';

/** The opened stores; close `meta` and then `blobs.close?.()` when done. */
export interface Stores {
  meta: MetaStore;
  blobs: BlobStore;
}

/** What the factory reads from the configuration. */
export type StoreConfig = Pick<Config, 'dataDir' | 'blobs' | 'metadata' | 'pgPool' | 'pgTimeoutSeconds'> &
  Partial<Pick<Config, 'readCacheBytes' | 'sqliteCacheBytes' | 'masterKeyFile' | 'masterKey'>>;

/**
 * Opens the configured stores. `identity` is the serving process's (workers/identity.ts): its owner is recorded on
 * queue claims and leases, its tag on staging files, and with it the store's background work starts (SQLite: WAL
 * checkpoints in a worker thread). Without it (offline commands, the worker primary) the owner is random and never
 * claims work, and nothing runs in the background. Creates the data dir. Throws when the database cannot be
 * reached or migrated (PostgreSQL: the pg error; SQLite: an Error naming meta.db and SQLite's reason, e.g. `file is
 * not a database`). With GRANARY_MASTER_KEY_FILE (or GRANARY_MASTER_KEY) the blobs go through store/crypto/encrypting-blob-store.ts; a key
 * file that cannot be read, or a missing or different key while the deployment's objects are encrypted, throws
 * MasterKeyError naming the file (store/crypto/master-key.ts), before anything is served (`keyCheck: false`: the
 * master-key rotation, which checks the keys itself).
 */
export async function openStores(config: StoreConfig, identity?: ProcessIdentity, opts: { keyCheck?: boolean } = {}): Promise<Stores> {
  const { dataDir } = config;
  await mkdir(dataDir, { recursive: true });
  const meta = await openMeta(config, identity);
  // The PostgreSQL and S3 modules are loaded only when configured: pg and the AWS SDK take ~350 ms to load, paid by
  // every CLI call otherwise.
  const files = async (): Promise<BlobStore> => {
    const blobsConfig = config.blobs;
    if (blobsConfig.kind === 'fs') return new FsBlobStore(dataDir, identity?.tag);
    const { S3BlobStore } = await import('./s3/s3-blob-store.js');
    const { cacheBytes, partBytes, staleUploadHours, timeoutSeconds, connectTimeoutSeconds, ...location } = blobsConfig;
    // One cache dir per worker slot (stable across restarts): a process empties its own at start (the index is in
    // memory); the offline CLI has its own.
    const slotDir = identity === undefined ? 'offline' : identity.slot === undefined ? 'server' : `slot-${identity.slot}`;
    const timeouts = { requestMs: timeoutSeconds * 1000, connectMs: connectTimeoutSeconds * 1000 };
    const options = { cacheDir: join(dataDir, 'blob-cache', slotDir), cacheBytes, partBytes, staleUploadMs: staleUploadHours * 3_600_000, timeouts };
    return new S3BlobStore(location, options);
  };
  let master: MasterKey | undefined;
  try {
    master = await readMasterKey(config);
    if (opts.keyCheck !== false) await checkMasterKey(meta, master, masterKeySource(config));
  } catch (err) {
    await meta.close();
    throw err;
  }
  const stored = new InlineAwareBlobStore(await files(), meta);
  return { meta, blobs: master ? new EncryptingBlobStore(stored, master) : stored };
}

async function openMeta(config: StoreConfig, identity: ProcessIdentity | undefined): Promise<MetaStore> {
  if (config.metadata.kind === 'postgres') {
    const { PgMetaStore } = await import('./postgres/pg-meta-store.js');
    return PgMetaStore.open(config.metadata.url, identity?.owner, { max: config.pgPool, timeoutSeconds: config.pgTimeoutSeconds });
  }
  const path = join(config.dataDir, 'meta.db');
  let sqlite: SqliteMetaStore;
  try {
    sqlite = new SqliteMetaStore(path, identity?.owner, {
      readCacheBytes: config.readCacheBytes,
      ...(config.sqliteCacheBytes !== undefined ? { cacheBytes: config.sqliteCacheBytes } : {}),
    });
  } catch (err) {
    // SQLite's own message ("file is not a database", "unable to open database file") names no file.
    throw new Error(`cannot open the metadata database ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (identity !== undefined) sqlite.startCheckpoints();
  return sqlite;
}

/**
 * A warning to log when this node keeps blobs on its local disk (GRANARY_BLOBS unset) while processes of other
 * machines share its PostgreSQL metadata: they cannot read this node's files (nor it theirs). Undefined when fine.
 * `self` is this process; the other processes are read from the `process:` leases.
 */
export async function sharedFsBlobsWarning(config: StoreConfig, meta: MetaStore, self: ProcessIdentity): Promise<string | undefined> {
  if (config.metadata.kind !== 'postgres' || config.blobs.kind !== 'fs') return undefined;
  const hosts = new Set<string>();
  for (const lease of await meta.leases.list('process:')) {
    const who = parseOwner(lease.owner);
    if (who && who.host !== self.host) hosts.add(who.host);
  }
  if (hosts.size === 0) return undefined;
  return (
    `GRANARY_METADATA is shared with other machines (${[...hosts].sort().join(', ')}) but blobs are kept in this ` +
    `node's data dir: objects uploaded through one node cannot be read through another; set GRANARY_BLOBS=s3://… on every node`
  );
}
