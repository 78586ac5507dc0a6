/**
 * The report of `granary migrate --data-dir`: what was copied, skipped and refused, printed at the end
 * as text or, with `--json`, as the last JSON line (after one line per object).
 */

/** Counts of one kind of configuration row: copied (created or changed), already identical, refused. */
export interface RowCounts {
  copied: number;
  unchanged: number;
  failed: number;
}

/** One problem, for the report: what it concerns (`bucket:key`, a bucket, a domain, …) and why. */
export interface Problem {
  what: string;
  reason: string;
}

/** Everything `migrateDataDir` did. Sizes in bytes. */
export interface MigrationReport {
  buckets: RowCounts;
  domains: RowCounts;
  accessKeys: RowCounts;
  /** Settings rows (server secrets of list markers and v1 ctx) and the root key pair of the data dir. */
  settings: RowCounts;
  pipelines: RowCounts;
  workflowTemplates: RowCounts;
  objects: {
    /** Entries committed at the destination (new or replacing a different one). */
    copied: number;
    /** Already at the destination with the same hash and putTime, attributes equal. */
    skipped: number;
    /** Already there with the same hash and putTime; attributes (MIME type, meta, …) brought up to date. */
    updated: number;
    /** The source bytes do not match their entry's etag (corrupt source): not copied. */
    mismatched: number;
    /** Other failures (a read or write error): not copied; a re-run tries again. */
    failed: number;
    /** Objects whose bytes stay in the metadata database (small objects), of `copied`. */
    inline: number;
    /** Copied entries that share a destination blob already copied for another entry (copies), of `copied`. */
    shared: number;
    /** Bytes read from the source and written to the destination BlobStore or inline rows. */
    bytesCopied: number;
    /** Sum of the `fsize` of every entry that is now at the destination (copied, skipped, updated). */
    bytesTotal: number;
  };
  /** Entries past their expiry (own or a lifecycle rule's) but not yet swept: logically deleted, not copied. */
  expiredNotCopied: number;
  /** Mismatches and failures, each with its reason. */
  problems: Problem[];
  /** What the migration never copies, by design (docs/guides/running-a-cluster.md). */
  notCopied: string[];
  /** The file mapping source blobs to destination blobs (resumption of shared blobs). */
  blobMap: string;
  /** Wall time of the run, seconds. */
  seconds: number;
}

/** What is never copied, and why (kept in the report so a user reading only it knows). */
export const NOT_COPIED = [
  'persistent-processing job history (pfop jobs and their states)',
  'async fetch task history',
  'the event notification outbox (undelivered notifications)',
  'resumable upload sessions in progress (v1 blocks, v2 multipart uploads)',
  'leases and worker registrations, pending blob deletions, the scrubber position and corrupt marks (local to the source)',
  'web console sessions and sign-in throttle counts (users sign in again on the cluster)',
];

const rows = (): RowCounts => ({ copied: 0, unchanged: 0, failed: 0 });

/** An empty report. */
export function newReport(blobMap: string): MigrationReport {
  return {
    buckets: rows(),
    domains: rows(),
    accessKeys: rows(),
    settings: rows(),
    pipelines: rows(),
    workflowTemplates: rows(),
    objects: { copied: 0, skipped: 0, updated: 0, mismatched: 0, failed: 0, inline: 0, shared: 0, bytesCopied: 0, bytesTotal: 0 },
    expiredNotCopied: 0,
    problems: [],
    notCopied: NOT_COPIED,
    blobMap,
    seconds: 0,
  };
}

/** Whether the run must end with a non-zero exit status: a mismatch or any failure. */
export function reportFailed(r: MigrationReport): boolean {
  const failedRows = [r.buckets, r.domains, r.accessKeys, r.settings, r.pipelines, r.workflowTemplates].some((c) => c.failed > 0);
  return failedRows || r.objects.mismatched > 0 || r.objects.failed > 0;
}

const MiB = 1024 * 1024;

/** The report as text, for a terminal. */
export function formatReport(r: MigrationReport): string {
  const line = (name: string, c: RowCounts): string => `  ${name.padEnd(20)} ${c.copied} copied, ${c.unchanged} already there${c.failed ? `, ${c.failed} FAILED` : ''}\n`;
  const o = r.objects;
  let out = `migrate: done in ${r.seconds.toFixed(1)} s\n`;
  out += line('buckets', r.buckets);
  out += line('bound domains', r.domains);
  out += line('access keys', r.accessKeys);
  out += line('settings', r.settings);
  out += line('pipelines', r.pipelines);
  out += line('workflow templates', r.workflowTemplates);
  out +=
    `  objects              ${o.copied} copied (${o.inline} inline, ${o.shared} sharing a blob with a copy), ${o.skipped} already there, ` +
    `${o.updated} attributes updated, ${o.mismatched} etag mismatches, ${o.failed} failed\n`;
  out += `  bytes                ${(o.bytesCopied / MiB).toFixed(1)} MiB copied, ${(o.bytesTotal / MiB).toFixed(1)} MiB at the destination\n`;
  if (r.expiredNotCopied > 0) out += `  expired entries      ${r.expiredNotCopied} not copied (past their expiry, not yet swept)\n`;
  for (const p of r.problems) out += `  ${p.what}: ${p.reason}\n`;
  out += `  not copied by design: ${r.notCopied.join('; ')}\n`;
  return out;
}
