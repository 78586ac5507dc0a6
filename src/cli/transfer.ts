/**
 * The client side of the `granary` command: talks the Kodo API to any Kodo endpoint — a Granary server
 * or Qiniu's cloud — named by remote profiles.
 *
 *   granary remote add <name> --ak <AccessKey> --sk <SecretKey> [--uc-host h:p] [--region z0] [--up-host h:p]
 *                  [--io-host h:p] [--rs-host h:p] [--rsf-host h:p] [--api-host h:p] [--https] [--no-check]
 *   granary remote list | remote remove <name>
 *   granary put <local-file|dir> <remote>:<bucket>[/<prefix>]
 *   granary get <remote>:<bucket>/<key|prefix> <local>
 *   granary sync <src> <dst> [--delete] [--dry-run]
 *   granary migrate <remote>:<bucket>[/<prefix>] <remote>:<bucket>[/<prefix>] [--mode auto|fetch|stream]
 *                   [--checkpoint file] [--fresh] [--url-expiry s] [--fetch-timeout s] [--no-verify]
 *   granary migrate --data-dir <dir> --metadata <postgres url> --blobs <s3 url>   (no positional arguments: an
 *                   embedded data dir into a PostgreSQL + S3 deployment, cli/migrate-data-dir.ts)
 * Shared: --concurrency n (default 8), --bwlimit rate (e.g. 10M, bytes/s), --include/--exclude glob (repeatable),
 * --domain d (download domain; not on put), --quiet, --json. `remote add` checks the keys by listing the buckets
 * (--no-check skips it). The remote-only commands (chgm, chtype, url, fetch, prefetch, pfop, prefop, buckets,
 * domains, qetag) are cli/remote-commands.ts; the remote forms of ls/stat/rm/cp/mv cli/entries.ts. Profiles: $GRANARY_CONFIG_DIR/remotes.json (transfer/remotes.ts).
 * Exit status 1 when anything failed (each failure is reported with its reason).
 */
import type { Command } from 'commander';
import { defaultCheckpoint } from '../transfer/checkpoint.js';
import type { DataDirMigrateOpts } from './migrate-data-dir.js';
import { TransferError } from '../transfer/errors.js';
import { parseLocation, type Location, type RemoteLocation } from '../transfer/location.js';
import type { MigrateMode } from '../transfer/migrate.js';
import { Reporter, type ReportMode } from '../transfer/progress.js';
import { RemoteStore, unknownRemote, unknownRemoteName, type RemoteProfile } from '../transfer/remotes.js';
import type { Session } from '../transfer/session.js';
import { parseRate, RateLimiter } from '../transfer/throttle.js';
import { addRemoteOnlyCommands } from './remote-commands.js';

// The commands' engines (the qiniu SDK, the put path of the data-dir migration) are imported when a command runs:
// every other `granary` call would otherwise load them (~200 ms).

interface CommonOpts {
  concurrency?: string;
  bwlimit?: string;
  include?: string[];
  exclude?: string[];
  domain?: string;
  quiet?: boolean;
  json?: boolean;
  dryRun?: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The flags of put/get/sync/migrate; `--domain` only where something is downloaded from a bucket. */
function withCommon(cmd: Command, { downloads = true }: { downloads?: boolean } = {}): Command {
  cmd
    .option('--concurrency <n>', 'objects in flight (default 8)')
    .option('--bwlimit <rate>', 'bandwidth limit in bytes per second, K/M/G suffixes (e.g. 10M)')
    .option('--include <glob>', 'only keys (relative paths) matching this glob; repeatable', collect)
    .option('--exclude <glob>', 'skip keys (relative paths) matching this glob; repeatable', collect);
  if (downloads) cmd.option('--domain <domain>', 'download domain of the source bucket (default: its first bound domain, else path style)');
  return cmd
    .option('--quiet', 'no progress bar: failures and the summary only')
    .option('--json', 'JSON lines on stdout: one per object, progress once a second, a summary');
}

function positiveInt(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new TransferError(`${flag} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

async function session(command: string, opts: CommonOpts): Promise<Session> {
  const { KeyFilter, Session } = await import('../transfer/session.js');
  const mode: ReportMode = opts.json ? 'json' : opts.quiet ? 'quiet' : 'bar';
  let limiter: RateLimiter | undefined;
  if (opts.bwlimit !== undefined) {
    try {
      limiter = new RateLimiter(parseRate(opts.bwlimit));
    } catch (err) {
      throw new TransferError((err as Error).message);
    }
  }
  return new Session(new RemoteStore(), {
    reporter: new Reporter(command, mode),
    concurrency: positiveInt(opts.concurrency, '--concurrency', 8),
    ...(limiter ? { limiter } : {}),
    filter: new KeyFilter(opts.include, opts.exclude),
    ...(opts.domain ? { domain: opts.domain } : {}),
    ...(opts.dryRun ? { dryRun: true } : {}),
  });
}

/** Finishes a command: summary, and exit status 1 when anything failed. */
function finish(s: Session, extra: Record<string, unknown> = {}): void {
  const summary = s.reporter.finish(extra);
  if (summary.failed > 0) process.exitCode = 1;
}

/**
 * `parseLocation`, refusing a `<name>:…` whose name is no known remote (`unknownRemote`): a mistyped remote is never
 * read as a local path (a local name with a colon is written `./a:b`).
 */
function strictLocation(text: string, names: ReadonlySet<string>): Location {
  const loc = parseLocation(text, names);
  const name = loc.kind === 'local' ? unknownRemoteName(text, names) : undefined;
  if (name !== undefined) throw unknownRemote(name, names);
  return loc;
}

async function remoteArg(s: Session, text: string, what: string): Promise<RemoteLocation> {
  const loc = parseLocation(text, await s.remoteNames());
  if (loc.kind === 'remote') return loc;
  const colon = text.indexOf(':');
  if (colon > 0) await s.client(text.slice(0, colon)); // names the unknown remote
  throw new TransferError(`${what} must be <remote>:<bucket>[/<prefix>], got ${JSON.stringify(text)}`);
}

function addRemoteCommands(program: Command): void {
  const remote = program.command('remote').description('named Kodo endpoints (a Granary server or Qiniu) for put/get/sync/migrate');
  remote
    .command('add <name>')
    .description('add or replace a remote (stored in $GRANARY_CONFIG_DIR/remotes.json, mode 0600)')
    .requiredOption('--ak <AccessKey>', 'AccessKey')
    .requiredOption('--sk <SecretKey>', 'SecretKey')
    .option('--uc-host <host>', 'region discovery host (/v4/query), e.g. 127.0.0.1:9000 or uc.qiniuapi.com')
    .option('--region <id>', "Qiniu region id (z0, z1, z2, na0, as0, …): that region's standard hosts")
    .option('--up-host <host>', 'upload host')
    .option('--io-host <host>', 'io host')
    .option('--rs-host <host>', 'rs host')
    .option('--rsf-host <host>', 'rsf host')
    .option('--api-host <host>', 'api host')
    .option('--s3-host <host>', "a Granary's S3 listener (e.g. 127.0.0.1:9002): what ls --versions, restore and bucket versioning use")
    .option('--https', 'use https for every host')
    .option('--no-check', 'save without checking the keys against the remote (by listing its buckets)')
    .action(async (name: string, o: Record<string, string | boolean | undefined>) => {
      const p: RemoteProfile = { name, accessKey: String(o.ak), secretKey: String(o.sk) };
      const str = (k: string): string | undefined => (typeof o[k] === 'string' && o[k] !== '' ? (o[k] as string) : undefined);
      const fields: Array<[keyof RemoteProfile, string]> = [
        ['ucHost', 'ucHost'],
        ['region', 'region'],
        ['upHost', 'upHost'],
        ['ioHost', 'ioHost'],
        ['rsHost', 'rsHost'],
        ['rsfHost', 'rsfHost'],
        ['apiHost', 'apiHost'],
        ['s3Host', 's3Host'],
      ];
      for (const [field, opt] of fields) {
        const v = str(opt);
        if (v !== undefined) {
          if (field !== 'region' && /^[a-z]+:\/\//i.test(v)) throw new TransferError(`--${opt.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} takes host[:port] without a scheme (use --https)`);
          (p as unknown as Record<string, string>)[field] = v;
        }
      }
      if (o.https) p.https = true;
      let checked = '';
      if (o.check !== false) {
        const [{ KodoClient }, { listBuckets }] = await Promise.all([import('../transfer/client.js'), import('../transfer/account.js')]);
        const buckets = await listBuckets(new KodoClient(p)).catch((err: unknown) => {
          throw new TransferError(`${(err as Error).message}; not saved (--no-check saves without checking)`);
        });
        checked = ` (keys checked: ${buckets.length} bucket${buckets.length === 1 ? '' : 's'})`;
      }
      const store = new RemoteStore();
      await store.put(p);
      process.stdout.write(`remote ${name} saved in ${store.file}${checked}\n`);
    });
  remote
    .command('list')
    .description('list remotes: name, AccessKey, endpoint (SecretKeys are not shown)')
    .action(async () => {
      const all = await new RemoteStore().load();
      for (const p of Object.values(all).sort((a, b) => (a.name < b.name ? -1 : 1))) {
        const where = p.ucHost ? `uc ${p.ucHost}` : p.region ? `region ${p.region}` : p.upHost ? `up ${p.upHost}` : 'uc uc.qiniuapi.com';
        process.stdout.write(`${p.name}\t${p.accessKey}\t${where}${p.https ? '\thttps' : ''}\n`);
      }
    });
  remote
    .command('remove <name>')
    .description('remove a remote')
    .action(async (name: string) => {
      if (!(await new RemoteStore().remove(name))) throw new TransferError(`unknown remote ${JSON.stringify(name)}`);
      process.stdout.write(`removed remote ${name}\n`);
    });
}

/** Adds `remote …`, `put`, `get`, `sync` and `migrate` to the program. */
export function addTransferCommands(program: Command): void {
  addRemoteCommands(program);
  addRemoteOnlyCommands(program);

  withCommon(
    program
      .command('put <local> <destination>')
      .description('upload a file or directory to <remote>:<bucket>[/<prefix>] (from 4 MiB resumable: an interrupted put sends only the missing parts)'),
    { downloads: false },
  ).action(
    async (local: string, destination: string, o: CommonOpts) => {
      const { runPut } = await import('../transfer/put.js');
      const s = await session('put', o);
      await runPut(s, local, await remoteArg(s, destination, 'the destination'));
      finish(s);
    },
  );

  withCommon(
    program
      .command('get <source> <local>')
      .description('download <remote>:<bucket>/<key|prefix> to a local path (files already there with the same size and etag are skipped)'),
  ).action(
    async (source: string, local: string, o: CommonOpts) => {
      const { runGet } = await import('../transfer/get.js');
      const s = await session('get', o);
      await runGet(s, await remoteArg(s, source, 'the source'), local);
      finish(s);
    },
  );

  withCommon(program.command('sync <source> <destination>').description('copy what differs (size, etag) between a directory and a bucket, or two buckets'))
    .option('--delete', 'delete destination keys the source lacks')
    .option('--dry-run', 'print what would be copied or deleted, change nothing')
    .action(async (source: string, destination: string, o: CommonOpts & { delete?: boolean }) => {
      const { runSync } = await import('../transfer/sync.js');
      const s = await session('sync', o);
      const names = await s.remoteNames();
      await runSync(s, strictLocation(source, names), strictLocation(destination, names), { delete: o.delete === true });
      finish(s);
    });

  withCommon(
    program
      .command('migrate [source] [destination]')
      .usage('<remote>:<bucket>[/<prefix>] <remote>:<bucket>[/<prefix>] [bucket-form options]\n       granary migrate --data-dir <dir> --metadata <postgres url> --blobs <s3 url> [--concurrency n] [--json]')
      .description(
        'two forms: (1) bucket form: copy a bucket to another endpoint (resumable, verified); ' +
          '(2) data-dir form, no arguments: copy an embedded data dir into a PostgreSQL + S3 deployment (resumable, verified by etag)',
      )
      .addHelpText(
        'after',
        '\nBucket form:   granary migrate qiniu:photos home:photos [--mode auto|fetch|stream] [--checkpoint file] [--fresh]\n' +
          '               [--url-expiry s] [--fetch-timeout s] [--no-verify] [--dry-run] [--bwlimit r] [--include g] [--exclude g] [--domain d]\n' +
          'Data-dir form: granary migrate --data-dir ./data --metadata postgres://… --blobs "s3://bucket?endpoint=…"\n' +
          '               (only --concurrency, --quiet and --json besides; docs/reference/cli.md)',
      ),
  )
    .option('--data-dir <dir>', 'data-dir form: the embedded data dir to copy (GRANARY_DATA_DIR, default ./data)')
    .option('--metadata <url>', 'data-dir form: the destination PostgreSQL, postgres://user:pass@host:port/db (GRANARY_METADATA)')
    .option('--blobs <url>', 'data-dir form: the destination S3 bucket, s3://<bucket>[/<prefix>]?endpoint=…&region=… (GRANARY_BLOBS, AWS_* credentials)')
    .option('--mode <mode>', 'bucket form: auto (server-side fetch when the destination reaches the source, else stream), fetch or stream', 'auto')
    .option('--checkpoint <file>', 'bucket form: checkpoint file (default: one per source and destination under $GRANARY_CONFIG_DIR/migrate/)')
    .option('--fresh', 'bucket form: ignore an existing checkpoint and start over')
    .option('--url-expiry <seconds>', 'bucket form: validity of the private download URLs given to the destination', '86400')
    .option('--fetch-timeout <seconds>', 'bucket form: how long to wait for one async fetch task', '3600')
    .option('--no-verify', 'bucket form: skip the verification pass')
    .option('--dry-run', 'bucket form: list what would be copied, change nothing')
    .action(
      async (
        source: string | undefined,
        destination: string | undefined,
        o: CommonOpts & DataDirMigrateOpts & { mode: string; checkpoint?: string; fresh?: boolean; urlExpiry: string; fetchTimeout: string; verify: boolean },
      ) => {
        if (source === undefined && destination === undefined) {
          const bucketOnly = (['bwlimit', 'include', 'exclude', 'domain', 'checkpoint', 'fresh', 'dryRun'] as const).filter((k) => o[k] !== undefined);
          if (bucketOnly.length > 0) {
            const flags = bucketOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ');
            throw new TransferError(`${flags}: only for migrate <remote>:<bucket> <remote>:<bucket>, not for the data-dir form`);
          }
          const { runDataDirMigrate } = await import('./migrate-data-dir.js');
          await runDataDirMigrate(o);
          return;
        }
        if (o.dataDir !== undefined || o.metadata !== undefined || o.blobs !== undefined) {
          throw new TransferError('--data-dir, --metadata and --blobs belong to the data-dir form of migrate, which takes no <source> <destination>');
        }
        if (!source || !destination) throw new TransferError('migrate needs <remote>:<bucket>[/<prefix>] <remote>:<bucket>[/<prefix>]');
        if (!['auto', 'fetch', 'stream'].includes(o.mode)) throw new TransferError(`--mode must be auto, fetch or stream, got ${JSON.stringify(o.mode)}`);
        const { runMigrate } = await import('../transfer/migrate.js');
        const s = await session('migrate', o);
        const src = await remoteArg(s, source, 'the source');
        const dst = await remoteArg(s, destination, 'the destination');
        const report = await runMigrate(s, src, dst, {
          mode: o.mode as MigrateMode,
          checkpointFile: o.checkpoint ?? defaultCheckpoint(s.store.dir, source, destination),
          fresh: o.fresh === true,
          urlExpiry: positiveInt(o.urlExpiry, '--url-expiry', 86_400),
          fetchTimeout: positiveInt(o.fetchTimeout, '--fetch-timeout', 3600),
          verify: o.verify,
        });
        finish(s, { ...report });
        if (!o.json) {
          process.stdout.write(
            `migrate: ${report.viaFetch} by server-side fetch, ${report.viaStream} streamed; verification: ${report.verified} matching, ${report.mismatched} not; putTime is not preserved (the Kodo API sets it at upload); checkpoint ${report.checkpoint}\n`,
          );
        }
      },
    );
}
