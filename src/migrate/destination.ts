/**
 * The two ends of `granary migrate --data-dir`. The source is an embedded data dir: its SQLite `meta.db` and its
 * blob files (whatever GRANARY_BLOBS says: that names the destination). The destination: a cluster deployment's stores, named the way the nodes name them
 * (GRANARY_METADATA = `postgres://user:pass@host:port/db`, GRANARY_BLOBS = `s3://<bucket>[/<prefix>]?endpoint=…`
 * with the AWS_* credentials; docs/guides/running-a-cluster.md). Opened as an offline user: a random owner that never
 * claims queued work, and no background work.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3BlobsConfig } from '../config.js';
import { FsBlobStore } from '../store/fs/fs-blob-store.js';
import { InlineAwareBlobStore } from '../store/inline-blob-store.js';
import { SqliteMetaStore } from '../store/sqlite/sqlite-meta-store.js';
import type { Stores } from './copy-entry.js';

/**
 * Checks a GRANARY_METADATA value names PostgreSQL; the message never echoes the URL (it may hold a password).
 * Throws an Error for the CLI to print (exit status 1).
 */
export function checkMetadataUrl(url: string | undefined): string {
  if (url === undefined || url === '') {
    throw new Error('migrate --data-dir needs the destination metadata: --metadata postgres://user:pass@host:port/db (or GRANARY_METADATA)');
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if ((scheme !== 'postgres' && scheme !== 'postgresql') || !URL.canParse(url)) {
    throw new Error('--metadata (GRANARY_METADATA) must be a postgres://user:pass@host:port/db URL');
  }
  return url;
}

/**
 * Opens the destination stores: PostgreSQL metadata (migrations applied at open) and the S3 blobs, with inline
 * blobs read from the metadata (store/inline-blob-store.ts). `cacheDir` holds the S3 store's local copies (unused
 * by the migration, which never asks for local files). Close `meta`, then `blobs.close()`.
 */
export async function openDestination(metadataUrl: string, blobs: S3BlobsConfig, cacheDir: string): Promise<Stores> {
  const { cacheBytes, partBytes, staleUploadHours, timeoutSeconds, connectTimeoutSeconds, ...location } = blobs;
  // Loaded here, not at start: every CLI call imports this module, and pg + the AWS SDK take ~350 ms to load.
  const [{ S3BlobStore }, { PgMetaStore }] = await Promise.all([
    import('../store/s3/s3-blob-store.js'),
    import('../store/postgres/pg-meta-store.js'),
  ]);
  const timeouts = { requestMs: timeoutSeconds * 1000, connectMs: connectTimeoutSeconds * 1000 };
  const files = new S3BlobStore(location, { cacheDir, cacheBytes, partBytes, staleUploadMs: staleUploadHours * 3_600_000, timeouts });
  const meta = await PgMetaStore.open(metadataUrl);
  return { meta, blobs: new InlineAwareBlobStore(files, meta) };
}

/**
 * Opens the source: the embedded stores of `dataDir` (`meta.db` and `blobs/`), as an offline user (no background
 * work). Throws when the data dir holds no metadata database (nothing to migrate, or a wrong path).
 */
export async function openSource(dataDir: string): Promise<Stores> {
  const path = join(dataDir, 'meta.db');
  try {
    await access(path);
  } catch {
    throw new Error(`${dataDir} holds no Granary data dir (no meta.db): check --data-dir (GRANARY_DATA_DIR)`);
  }
  const meta = new SqliteMetaStore(path);
  return { meta, blobs: new InlineAwareBlobStore(new FsBlobStore(dataDir), meta) };
}
