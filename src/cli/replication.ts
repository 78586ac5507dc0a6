/**
 * Bucket replication (offline, root rights; replication/rules.ts, docs/guides/replication.md):
 * `granary replication add|ls|rm|status|resync`. A running server sees a new or removed rule at once (it reads the
 * bucket's rules on every change) and picks up rows a command queued (initial sync, resync) within 2 s.
 * Secrets are never printed: `ls` shows the destination AccessKey masked and no secret.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { Errors } from '../errors.js';
import { maskTarget, replicationStatus } from '../ports/replication.js';
import { addReplication, removeReplication, resync, rulesOf } from '../replication/rules.js';
import { offline, withDataDir, type Opts } from './context.js';
import { parseRate } from '../transfer/throttle.js';

type AddOpts = Opts & {
  endpoint?: string;
  targetBucket?: string;
  region?: string;
  destAccessKey?: string;
  destSecretKey?: string;
  destSecretKeyFile?: string;
  prefix?: string;
  id?: string;
  deletes?: boolean;
  existing?: boolean;
  storageClass?: string;
  bandwidth?: string;
  virtualHost?: boolean;
};

/** Adds the `replication` command group to `program`. */
export function addReplicationCommands(program: Command): void {
  const repl = program.command('replication').description('replicate buckets to another Granary or any S3-compatible store');

  withDataDir(repl.command('add <bucket>').description('add a replication rule: keep <bucket> in step at a destination bucket'))
    .requiredOption('--endpoint <url>', "the destination's S3 API, e.g. https://s3.example.com or http://10.0.0.2:9001")
    .requiredOption('--target-bucket <name>', 'the destination bucket (it must exist)')
    .requiredOption('--dest-access-key <ak>', 'AccessKey at the destination')
    .option('--dest-secret-key <sk>', 'SecretKey at the destination (visible in the process list: prefer --dest-secret-key-file)')
    .option('--dest-secret-key-file <path>', 'file whose first line is the SecretKey at the destination')
    .option('--region <region>', 'region of the destination (SigV4 scope)', 'us-east-1')
    .option('--prefix <p>', 'only keys starting with p', '')
    .option('--id <id>', 'rule id (default: generated)')
    .option('--no-deletes', 'do not replicate deletes (deleted objects stay at the destination)')
    .option('--existing', 'copy the objects that already exist too (initial sync)')
    .option('--storage-class <class>', 'storage class at the destination, e.g. STANDARD_IA')
    .option('--bandwidth <rate>', 'bandwidth limit of this destination, bytes per second (K/M/G suffixes), e.g. 10M')
    .option('--virtual-host', 'virtual-hosted addressing (bucket.host) instead of path style')
    .action((bucket: string, opts: AddOpts) =>
      offline(opts, async (g) => {
        let secretKey = opts.destSecretKey;
        if (opts.destSecretKeyFile) secretKey = (await readFile(opts.destSecretKeyFile, 'utf8')).split(/\r?\n/)[0]?.trim();
        if (!secretKey) throw Errors.badRequest('--dest-secret-key or --dest-secret-key-file is required');
        const out = await addReplication(g, bucket, {
          endpoint: opts.endpoint ?? '',
          targetBucket: opts.targetBucket ?? '',
          accessKey: opts.destAccessKey ?? '',
          secretKey,
          ...(opts.region ? { region: opts.region } : {}),
          ...(opts.prefix ? { prefix: opts.prefix } : {}),
          ...(opts.id ? { id: opts.id } : {}),
          deletes: opts.deletes !== false,
          existing: opts.existing === true,
          ...(opts.storageClass ? { storageClass: opts.storageClass } : {}),
          ...(opts.bandwidth ? { bandwidth: parseRate(opts.bandwidth) } : {}),
          ...(opts.virtualHost ? { virtualHost: true } : {}),
        });
        process.stdout.write(`added replication rule ${out.rule.id} of bucket ${bucket}: target ${out.target.arn}\n`);
        if (out.rule.existing) process.stdout.write(`initial sync: ${out.queued} objects queued\n`);
      }),
    );

  withDataDir(repl.command('ls [bucket]').description('list replication rules: <bucket>\\t<rule>\\t<prefix>\\t<endpoint>/<bucket>\\t<flags>'))
    .option('--json', 'print rules and their targets (AccessKey masked, no secret) as JSON')
    .action((bucket: string | undefined, opts: Opts & { json?: boolean }) =>
      offline(opts, async (g) => {
        const buckets = bucket ? [bucket] : (await g.meta.listBuckets()).map((b) => b.name);
        const out: Array<Record<string, unknown>> = [];
        for (const name of buckets) {
          for (const rule of await rulesOf(g, name)) {
            const t = await g.meta.replication.getTarget(rule.target);
            out.push({ bucket: name, ...rule, destination: t ? maskTarget(t) : null });
          }
        }
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }
        for (const r of out) {
          const d = r.destination as { endpoint: string; bucket: string; accessKey: string; bandwidth: number } | null;
          const flags = [r.deletes ? 'deletes' : 'no-deletes', r.existing ? 'existing' : '', r.storageClass ?? '', d && d.bandwidth ? `${d.bandwidth}B/s` : '']
            .filter((f) => f !== '')
            .join(',');
          process.stdout.write(`${String(r.bucket)}\t${String(r.id)}\t${String(r.prefix)}\t${d ? `${d.endpoint}/${d.bucket} (${d.accessKey})` : '(target missing)'}\t${flags}\n`);
        }
      }),
    );

  withDataDir(repl.command('rm <bucket> <rule>').description('remove a replication rule (its queued copies are dropped; the destination keeps what it has)')).action(
    (bucket: string, rule: string, opts: Opts) =>
      offline(opts, async (g) => {
        await removeReplication(g, bucket, rule);
        process.stdout.write(`removed replication rule ${rule} of bucket ${bucket}\n`);
      }),
  );

  withDataDir(repl.command('resync <bucket> <rule>').description('queue every existing object of the rule again (e.g. after the destination lost data)')).action(
    (bucket: string, rule: string, opts: Opts) =>
      offline(opts, async (g) => {
        const n = await resync(g, bucket, rule);
        process.stdout.write(`resync: ${n} objects queued\n`);
      }),
  );

  withDataDir(
    repl.command('status [bucket]').description('per rule: objects and bytes pending, oldest pending age, failed objects and the last error'),
  )
    .option('--json', 'print as JSON')
    .option('--key <key>', "one object's status (PENDING, COMPLETED, FAILED) per rule, with its last error")
    .action((bucket: string | undefined, opts: Opts & { json?: boolean; key?: string }) =>
      offline(opts, async (g) => {
        if (opts.key !== undefined) {
          if (!bucket) throw Errors.badRequest('--key needs a bucket');
          const rows = await g.meta.replication.statusOf(bucket, opts.key);
          const view = rows.map((r) => ({
            rule: r.rule,
            status: replicationStatus([r]),
            attempts: r.attempts,
            ...(r.result !== undefined ? { result: r.result } : {}),
          }));
          if (opts.json) process.stdout.write(`${JSON.stringify(view)}\n`);
          else for (const v of view) process.stdout.write(`${v.rule}\t${v.status}\t${v.result ?? ''}\n`);
          return;
        }
        const now = g.clock.nowMs();
        const stats = (await g.meta.replication.stats(now)).filter((s) => bucket === undefined || s.bucket === bucket);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(stats.map((s) => ({ ...s, oldestPendingSeconds: s.oldestPendingMs === undefined ? 0 : Math.round((now - s.oldestPendingMs) / 1000) })))}\n`);
          return;
        }
        process.stdout.write('bucket\trule\tpending\tpending_bytes\toldest_pending_s\tfailed\tcompleted\tlast_error\n');
        for (const s of stats) {
          const age = s.oldestPendingMs === undefined ? 0 : Math.round((now - s.oldestPendingMs) / 1000);
          process.stdout.write(`${s.bucket}\t${s.rule}\t${s.pending}\t${s.pendingBytes}\t${age}\t${s.failed}\t${s.completed}\t${s.lastError ?? ''}\n`);
        }
      }),
    );
}
