/**
 * `granary migrate --data-dir <dir> --metadata <postgres url> --blobs <s3 url>`: copies an embedded data
 * dir into a PostgreSQL + S3 deployment, through the MetaStore and BlobStore ports only (any source and destination
 * implementation works; the tool never touches SQL or files itself).
 *
 * Order: configuration (copy-config.ts: buckets without their quota, domains, keys, settings, pipelines, workflow
 * templates), then the entries of every bucket (copy-entry.ts), `concurrency` at a time, listed in key order one
 * page of 1,000 at a time (memory is bounded by the page and the objects in flight; bytes are streamed), then the
 * buckets' quotas. Resumable: every step skips what the destination already holds identically, so a run killed at
 * any point (SIGKILL included) is finished by running it again.
 *
 * Entries past their expiry (own or a lifecycle rule's) are logically deleted and not copied; the report counts
 * them. Nothing is written to the source's metadata: entries of buckets with lifecycle rules are read as stored
 * through an `updateObject` whose change is always aborted (the port's only read of an entry's own expiry).
 */
import type { MetaStore, ObjectRecord } from '../ports/meta.js';
import { forEachLimit } from '../transfer/pool.js';
import type { BlobMap } from './blob-map.js';
import { applyQuotas, copyConfiguration } from './copy-config.js';
import { EntryCopier, type ObjectEvent, type Stores } from './copy-entry.js';
import { newReport, type MigrationReport } from './report.js';

export interface MigrateOptions {
  /** The source data dir (its `credentials.json` holds the generated root key pair). */
  dataDir: string;
  /** Objects in flight at once (≥ 1). */
  concurrency: number;
  /** Where source blobs map to destination blobs (blob-map.ts); `mapPath` is its file, for the report. */
  map: BlobMap;
  mapPath: string;
  /** Unix seconds now (entries expired at this time are not copied). */
  nowSec?: () => number;
  /** Called once per entry with what happened to it. */
  onObject?: (e: ObjectEvent) => void;
}

/** Thrown by an aborted `updateObject`: the read of an entry as stored changes nothing. */
const READ_ONLY = new Error('read only');

/** The entry as stored (its own expireAt and transitions, no lifecycle rule applied), or undefined when gone. */
async function storedEntry(meta: MetaStore, bucket: string, key: string, nowSec: number): Promise<ObjectRecord | undefined> {
  let captured: ObjectRecord | undefined;
  try {
    await meta.updateObject(bucket, key, nowSec, (rec) => {
      captured = rec;
      throw READ_ONLY;
    });
  } catch (err) {
    if (err !== READ_ONLY) throw err;
  }
  return captured;
}

/** Every live entry of `bucket` in key order, a page at a time. */
async function* entriesOf(meta: MetaStore, bucket: string, nowSec: () => number): AsyncGenerator<ObjectRecord> {
  let after: { key: string; isPrefix: boolean } | undefined;
  for (;;) {
    const page = await meta.listObjects({ bucket, prefix: '', delimiter: '', limit: 1000, nowSec: nowSec(), ...(after ? { after } : {}) });
    for (const e of page.entries) if (e.kind === 'item') yield e.item;
    const last = page.entries[page.entries.length - 1];
    if (!page.more || !last || last.kind !== 'item') return;
    after = { key: last.item.key, isPrefix: false };
  }
}

/** Runs the migration from `src` to `dest`; answers the report (it never throws for one object's failure). */
export async function migrateDataDir(src: Stores, dest: Stores, o: MigrateOptions): Promise<MigrationReport> {
  const started = Date.now();
  const nowSec = o.nowSec ?? ((): number => Math.floor(Date.now() / 1000));
  const report = newReport(o.mapPath);
  const buckets = await copyConfiguration(src.meta, dest.meta, o.dataDir, report);
  const copier = new EntryCopier(src, dest, o.map, report, nowSec, o.onObject ?? (() => undefined));

  for (const b of buckets) {
    const withRules = (b.settings.lifecycleRules?.length ?? 0) > 0;
    let listed = 0;
    await forEachLimit(entriesOf(src.meta, b.name, nowSec), o.concurrency, async (item) => {
      listed++;
      let raw: ObjectRecord | undefined = item;
      try {
        if (withRules) raw = await storedEntry(src.meta, b.name, item.key, nowSec());
      } catch (err) {
        report.objects.failed++;
        report.problems.push({ what: `${b.name}:${item.key}`, reason: (err as Error).message });
        o.onObject?.({ bucket: b.name, key: item.key, action: 'failed', bytes: 0, reason: (err as Error).message });
        return;
      }
      if (raw) await copier.copy(item, raw);
    });
    report.expiredNotCopied += Math.max(0, (await src.meta.countObjects(b.name)) - listed);
  }

  await applyQuotas(buckets, dest.meta, report);
  report.seconds = (Date.now() - started) / 1000;
  return report;
}
