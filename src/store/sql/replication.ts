/**
 * The Replication port (ports/replication.ts) on SQLite and PostgreSQL (db.ts): tables `replication_targets` and
 * `replication_outbox` (schemas: store/sqlite/replication-schema.ts, store/postgres/schema.ts migration
 * REPLICATION). The in-transaction write of marks is each backend's (store/sqlite/event-outbox.ts,
 * store/postgres/event-outbox.ts) with the one statement `MARK_SQL` here. Claims follow queue-table.ts: one
 * `UPDATE … WHERE seq = (SELECT … LIMIT 1<skipLocked>) RETURNING *`, every later state change a compare-and-set
 * on the state and the claiming process (`owner`); `complete` also compares `gen` (a change arrived meanwhile →
 * the row waits again). Times in Unix ms.
 */
import type {
  ReplicationItem,
  ReplicationMark,
  ReplicationRuleStats,
  ReplicationState,
  ReplicationStore,
  ReplicationTarget,
} from '../../ports/replication.js';
import { flag, type SqlDb } from './db.js';

interface ItemRow {
  seq: number | bigint;
  rule: string;
  bucket: string;
  key: string;
  state: ReplicationState;
  gen: number | bigint;
  attempts: number;
  result: string | null;
  size: number | bigint;
  created_ms: number | bigint;
  updated_ms: number | bigint;
  next_run_ms: number | bigint;
  copied: string | null;
  failed: number | bigint | boolean;
}

interface TargetRow {
  arn: string;
  source_bucket: string;
  endpoint: string;
  region: string;
  bucket: string;
  access_key: string;
  secret_key: string;
  path_style: number | boolean;
  bandwidth: number | bigint;
  created_ms: number | bigint;
}

const toItem = (r: ItemRow): ReplicationItem => ({
  id: String(r.seq),
  rule: r.rule,
  bucket: r.bucket,
  key: r.key,
  state: r.state,
  gen: Number(r.gen),
  attempts: r.attempts,
  ...(r.result !== null ? { result: r.result } : {}),
  size: Number(r.size),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
  nextRunMs: Number(r.next_run_ms),
  ...(r.copied !== null ? { copied: r.copied } : {}),
  failed: flag(r.failed),
});

const toTarget = (r: TargetRow): ReplicationTarget => ({
  arn: r.arn,
  sourceBucket: r.source_bucket,
  endpoint: r.endpoint,
  region: r.region,
  bucket: r.bucket,
  accessKey: r.access_key,
  secretKey: r.secret_key,
  pathStyle: flag(r.path_style),
  bandwidth: Number(r.bandwidth),
  createdMs: Number(r.created_ms),
});

/**
 * Marks one key changed: binds `markArgs` (rule, bucket, key, size, and the change's time thrice). A new row waits; an existing one
 * counts one more change (`gen`), keeps the time of its oldest pending change, and waits again at once unless it
 * is running (its worker sees `gen` moved when it ends).
 */
export const MARK_SQL = `INSERT INTO replication_outbox (rule, bucket, key, state, gen, attempts, size, created_ms, updated_ms, next_run_ms)
VALUES (?, ?, ?, 'waiting', 1, 0, ?, ?, ?, ?)
ON CONFLICT (rule, bucket, key) DO UPDATE SET
  gen = replication_outbox.gen + 1,
  size = excluded.size,
  created_ms = CASE WHEN replication_outbox.state = 'done' THEN excluded.created_ms ELSE replication_outbox.created_ms END,
  state = CASE WHEN replication_outbox.state = 'running' THEN 'running' ELSE 'waiting' END,
  failed = 0,
  attempts = CASE WHEN replication_outbox.state = 'running' THEN replication_outbox.attempts ELSE 0 END,
  next_run_ms = excluded.next_run_ms,
  updated_ms = excluded.updated_ms`;

/** The values `MARK_SQL` binds for `m`. */
export function markArgs(m: ReplicationMark): Array<string | number> {
  return [m.rule, m.bucket, m.key, m.size, m.atMs, m.atMs, m.atMs];
}

const RUNNING = `seq = ? AND state = 'running' AND owner = ?`;
const ABANDONED = `(owner IS NULL OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'process:' || replication_outbox.owner))`;

export class SqlReplication implements ReplicationStore {
  private readonly listeners = new Set<() => void>();
  private notifyScheduled = false;
  private readonly claimSql: string;

  /** `owner`: the identity of this process (recorded on claims). */
  constructor(
    private readonly db: SqlDb,
    private readonly owner: string,
  ) {
    this.claimSql = `UPDATE replication_outbox SET state = 'running', owner = ?, attempts = attempts + 1, updated_ms = ?
      WHERE seq = (SELECT seq FROM replication_outbox WHERE state IN ('waiting', 'failed') AND next_run_ms <= ?
                   ORDER BY next_run_ms, seq LIMIT 1${db.skipLocked}) RETURNING *`;
  }

  /** Tells the subscribers on the next turn of the event loop (after the writing transaction). */
  scheduleNotify(): void {
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      for (const l of this.listeners) l();
    });
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async putTarget(t: ReplicationTarget): Promise<void> {
    await this.db.run(
      `INSERT INTO replication_targets (arn, source_bucket, endpoint, region, bucket, access_key, secret_key, path_style, bandwidth, created_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (arn) DO UPDATE SET endpoint = excluded.endpoint, region = excluded.region, bucket = excluded.bucket,
         access_key = excluded.access_key, secret_key = excluded.secret_key, path_style = excluded.path_style,
         bandwidth = excluded.bandwidth`,
      [t.arn, t.sourceBucket, t.endpoint, t.region, t.bucket, t.accessKey, t.secretKey, t.pathStyle ? 1 : 0, t.bandwidth, t.createdMs],
    );
  }

  async getTarget(arn: string): Promise<ReplicationTarget | undefined> {
    const row = await this.db.get<TargetRow>('SELECT * FROM replication_targets WHERE arn = ?', [arn]);
    return row ? toTarget(row) : undefined;
  }

  async listTargets(sourceBucket?: string): Promise<ReplicationTarget[]> {
    const rows =
      sourceBucket === undefined
        ? await this.db.all<TargetRow>('SELECT * FROM replication_targets ORDER BY source_bucket, arn')
        : await this.db.all<TargetRow>('SELECT * FROM replication_targets WHERE source_bucket = ? ORDER BY arn', [sourceBucket]);
    return rows.map(toTarget);
  }

  async deleteTarget(arn: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM replication_targets WHERE arn = ?', [arn])) > 0;
  }

  async mark(marks: readonly ReplicationMark[]): Promise<void> {
    if (marks.length === 0) return;
    await this.db.batch(marks.map((m) => ({ sql: MARK_SQL, args: markArgs(m) })));
    this.scheduleNotify();
  }

  async claim(nowMs: number): Promise<ReplicationItem | undefined> {
    const row = await this.db.get<ItemRow>(this.claimSql, [this.owner, nowMs, nowMs]);
    return row ? toItem(row) : undefined;
  }

  async nextRunMs(): Promise<number | undefined> {
    const r = await this.db.get<{ t: number | bigint | null }>(
      "SELECT MIN(next_run_ms) AS t FROM replication_outbox WHERE state IN ('waiting', 'failed')",
    );
    return r?.t === null || r?.t === undefined ? undefined : Number(r.t);
  }

  async complete(item: ReplicationItem, result: string, copied: string | undefined, remove: boolean, nowMs: number): Promise<boolean> {
    const [done] = await this.db.batch([
      remove
        ? { sql: `DELETE FROM replication_outbox WHERE ${RUNNING} AND gen = ?`, args: [Number(item.id), this.owner, item.gen] }
        : {
            sql: `UPDATE replication_outbox SET state = 'done', owner = NULL, failed = 0, result = ?, copied = ?, updated_ms = ?
                  WHERE ${RUNNING} AND gen = ?`,
            args: [result, copied ?? null, nowMs, Number(item.id), this.owner, item.gen],
          },
      // gen moved while it ran: run it again at once (the attempt count starts over).
      {
        sql: `UPDATE replication_outbox SET state = 'waiting', owner = NULL, attempts = 0, next_run_ms = ?, updated_ms = ?,
              copied = COALESCE(?, copied) WHERE ${RUNNING}`,
        args: [nowMs, nowMs, copied ?? null, Number(item.id), this.owner],
      },
    ]);
    const again = (done?.changes ?? 0) === 0;
    if (again) this.scheduleNotify();
    return true;
  }

  async retryAt(item: ReplicationItem, nextRunMs: number, result: string, failed: boolean, nowMs: number): Promise<boolean> {
    // A change that arrived meanwhile is tried at once rather than after the back-off. (The casts: PostgreSQL
    // would type a CASE of untyped parameters as text.)
    const n = await this.db.run(
      `UPDATE replication_outbox SET state = ?, owner = NULL, result = ?, updated_ms = ?, failed = ?,
         next_run_ms = CASE WHEN gen = ? THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END WHERE ${RUNNING}`,
      [failed ? 'failed' : 'waiting', result, nowMs, failed ? 1 : 0, item.gen, nextRunMs, nowMs, Number(item.id), this.owner],
    );
    return n === 1;
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    const n = await this.db.run(
      `UPDATE replication_outbox SET state = 'waiting', owner = NULL,
         attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, next_run_ms = ?, updated_ms = ? WHERE ${RUNNING}`,
      [nowMs, nowMs, Number(id), this.owner],
    );
    return n === 1;
  }

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.db.run(
      `UPDATE replication_outbox SET state = 'waiting', owner = NULL, next_run_ms = ?, updated_ms = ?
       WHERE state = 'running' AND ${ABANDONED}`,
      [nowMs, nowMs],
    );
  }

  async statusOf(bucket: string, key: string): Promise<ReplicationItem[]> {
    return (await this.db.all<ItemRow>('SELECT * FROM replication_outbox WHERE bucket = ? AND key = ? ORDER BY rule', [bucket, key])).map(toItem);
  }

  async stats(nowMs: number): Promise<ReplicationRuleStats[]> {
    void nowMs;
    const rows = await this.db.all<{
      bucket: string;
      rule: string;
      pending: number | bigint;
      pending_bytes: number | bigint | null;
      oldest: number | bigint | null;
      failed: number | bigint;
      completed: number | bigint;
    }>(
      `SELECT bucket, rule,
         SUM(CASE WHEN state IN ('waiting', 'running', 'failed') THEN 1 ELSE 0 END) AS pending,
         SUM(CASE WHEN state IN ('waiting', 'running', 'failed') THEN size ELSE 0 END) AS pending_bytes,
         MIN(CASE WHEN state IN ('waiting', 'running', 'failed') THEN created_ms END) AS oldest,
         SUM(CASE WHEN state <> 'done' AND failed = 1 THEN 1 ELSE 0 END) AS failed,
         SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END) AS completed
       FROM replication_outbox GROUP BY bucket, rule ORDER BY bucket, rule`,
    );
    const out: ReplicationRuleStats[] = [];
    for (const r of rows) {
      const last = await this.db.get<{ result: string }>(
        `SELECT result FROM replication_outbox WHERE bucket = ? AND rule = ? AND state IN ('failed', 'waiting')
           AND result IS NOT NULL ORDER BY updated_ms DESC LIMIT 1`,
        [r.bucket, r.rule],
      );
      out.push({
        bucket: r.bucket,
        rule: r.rule,
        pending: Number(r.pending),
        pendingBytes: Number(r.pending_bytes ?? 0),
        ...(r.oldest !== null ? { oldestPendingMs: Number(r.oldest) } : {}),
        failed: Number(r.failed),
        completed: Number(r.completed),
        ...(last ? { lastError: last.result } : {}),
      });
    }
    return out;
  }

  async backlog(): Promise<number> {
    const r = await this.db.get<{ n: number | bigint }>("SELECT COUNT(*) AS n FROM replication_outbox WHERE state <> 'done'");
    return Number(r?.n ?? 0);
  }

  async dropRule(bucket: string, rule: string): Promise<number> {
    return this.db.run('DELETE FROM replication_outbox WHERE bucket = ? AND rule = ?', [bucket, rule]);
  }
}
