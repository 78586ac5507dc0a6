/**
 * `granary migrate --data-dir <dir> --metadata <postgres url> --blobs <s3 url> [--concurrency n] [--json|--quiet]`:
 * the data-dir form of `migrate` (without positional arguments; cli/transfer.ts dispatches). Copies an embedded
 * data dir into a PostgreSQL + S3 deployment (migrate/run.ts). The flags default to GRANARY_DATA_DIR,
 * GRANARY_METADATA and GRANARY_BLOBS (+ AWS_* credentials), like `serve`.
 *
 * Output: text — a line per problem as it happens and the report at the end; `--json` — one JSON line per object
 * (`{"event":"object","bucket","key","action","bytes","reason"?}`) and a last `{"event":"summary",…report}`;
 * `--quiet` — the report only. Exit status 1 on an etag mismatch or any failure (a re-run retries failures).
 */
import { join } from 'node:path';
import { loadConfig } from '../config.js';
import { requireDataDir } from './context.js';
import { BlobMap } from '../migrate/blob-map.js';
import type { ObjectEvent } from '../migrate/copy-entry.js';
import { checkMetadataUrl, openDestination, openSource } from '../migrate/destination.js';
import { formatReport, reportFailed } from '../migrate/report.js';
import { migrateDataDir } from '../migrate/run.js';

/** The flags of the data-dir form. */
export interface DataDirMigrateOpts {
  dataDir?: string;
  metadata?: string;
  blobs?: string;
  concurrency?: string;
  json?: boolean;
  quiet?: boolean;
}

/** Runs the data-dir migration; sets `process.exitCode` to 1 when the report has a mismatch or a failure. */
export async function runDataDirMigrate(o: DataDirMigrateOpts): Promise<void> {
  const env = { ...process.env };
  if (o.dataDir !== undefined) env.GRANARY_DATA_DIR = o.dataDir;
  if (o.blobs !== undefined) env.GRANARY_BLOBS = o.blobs;
  // The destination's metadata is not this process's: GRANARY_METADATA must not make the source PostgreSQL too.
  const metadataUrl = checkMetadataUrl(o.metadata ?? env.GRANARY_METADATA);
  delete env.GRANARY_METADATA;
  const config = loadConfig(env);
  if (config.blobs.kind !== 's3') {
    throw new Error('migrate --data-dir needs the destination blobs: --blobs s3://<bucket>[/<prefix>]?endpoint=… (or GRANARY_BLOBS)');
  }
  const concurrency = o.concurrency === undefined ? 8 : Number(o.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) {
    throw new Error(`--concurrency must be an integer 1..256, got ${JSON.stringify(o.concurrency)}`);
  }

  await requireDataDir(config);
  // The source: the data dir's SQLite and blob files, whatever GRANARY_BLOBS says (that names the destination).
  const src = await openSource(config.dataDir);
  const destName = `${metadataUrl.replace(/\/\/[^@/]*@/, '//')}|${config.blobs.bucket}/${config.blobs.prefix}|${config.blobs.endpoint ?? ''}`;
  const mapPath = BlobMap.pathFor(config.dataDir, destName);
  const map = new BlobMap(mapPath);
  let dest: Awaited<ReturnType<typeof openDestination>> | undefined;
  try {
    dest = await openDestination(metadataUrl, config.blobs, join(config.dataDir, 'blob-cache', 'migrate'));
    const print = (text: string): boolean => process.stdout.write(text);
    const onObject = (e: ObjectEvent): void => {
      if (o.json) print(`${JSON.stringify({ event: 'object', ...e })}\n`);
      else if (!o.quiet && (e.action === 'mismatch' || e.action === 'failed')) process.stderr.write(`${e.bucket}:${e.key}: ${e.action}: ${e.reason ?? ''}\n`);
    };
    const report = await migrateDataDir(src, dest, { dataDir: config.dataDir, concurrency, map, mapPath, onObject });
    print(o.json ? `${JSON.stringify({ event: 'summary', ...report })}\n` : formatReport(report));
    if (reportFailed(report)) process.exitCode = 1;
  } finally {
    map.close();
    await src.meta.close();
    await src.blobs.close?.();
    if (dest) {
      await dest.meta.close();
      await dest.blobs.close?.();
    }
  }
}
