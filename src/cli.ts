/**
 * The `granary` command (commander): `serve`, `bucket create|list|delete|nrop|style|unstyle|separator|styles`,
 * `domain bind|list`, `keys show|create|list|delete`, `pipeline create|list`, entry commands `stat`, `rm`,
 * `cp`, `mv`, `ls`, and `scrub` (check every blob against its checksums).
 * Flags mirror the GRANARY_* environment variables. Commands other than `serve` work on the data dir directly
 * (SQLite in WAL mode allows this while a server runs; domain changes reach a running server within 5 s).
 */
import { Command } from 'commander';
import pino from 'pino';
import { KeyIndex } from './auth/key-index.js';
import { loadRootKeys } from './auth/keys.js';
import { bindDomain, createBucket, dropBucket, setBucketNrop, setBucketPrivate } from './buckets/buckets.js';
import { DomainIndex } from './buckets/domain-index.js';
import { removeStyle, setSeparator, setStyle, stylesOf } from './buckets/styles.js';
import { loadConfig, type Config } from './config.js';
import type { Granary } from './context.js';
import { Errors, isKodoError } from './errors.js';
import { FopPools } from './fops/run.js';
import { listPipelines, parseConcurrency, putPipeline } from './jobs/pipelines.js';
import { openStores, startGranary } from './main.js';
import { copyEntry, moveEntry } from './objects/manage/copy.js';
import { deleteEntry } from './objects/manage/delete.js';
import type { EntryRef } from './objects/manage/ref.js';
import { statEntry } from './objects/manage/stat.js';
import { streamObjects } from './objects/list.js';
import { scrubPass } from './objects/scrub.js';
import { toJson } from './roles/json.js';
import { systemClock } from './ports/clock.js';
import { FreeSpace } from './store/fs/free-space.js';

/** Flag → environment variable it mirrors. */
const FLAG_ENV: Record<string, string> = {
  port: 'GRANARY_PORT',
  host: 'GRANARY_HOST',
  dataDir: 'GRANARY_DATA_DIR',
  publicUrl: 'GRANARY_PUBLIC_URL',
  accessKey: 'GRANARY_ACCESS_KEY',
  secretKey: 'GRANARY_SECRET_KEY',
  logLevel: 'GRANARY_LOG_LEVEL',
  outboundAllow: 'GRANARY_OUTBOUND_ALLOW',
};

/** Config from the environment, overridden by the flags given. */
function configFrom(opts: Record<string, string | undefined>): Config {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const [flag, name] of Object.entries(FLAG_ENV)) if (opts[flag] !== undefined) env[name] = opts[flag];
  return loadConfig(env);
}

/** A context for offline commands: the stores of the data dir, no server. */
async function offlineContext(config: Config): Promise<Granary> {
  const { meta, blobs } = await openStores(config.dataDir);
  const { keys } = await loadRootKeys(config.dataDir, {
    ...(config.accessKey ? { accessKey: config.accessKey } : {}),
    ...(config.secretKey ? { secretKey: config.secretKey } : {}),
  });
  const keyIndex = new KeyIndex(meta, keys);
  await keyIndex.reload();
  return {
    config,
    meta,
    blobs,
    space: new FreeSpace(config.dataDir, config.minFree),
    clock: systemClock,
    log: pino({ level: 'silent' }),
    keys,
    keyIndex,
    secretOf: keyIndex.secretOf,
    jobs: meta.jobs,
    outbound: { allow: [] },
    domains: new DomainIndex(meta),
    fopPools: new FopPools({ image: 1, video: 1 }),
    fopTools: {},
    publicUrl: config.publicUrl ?? `http://127.0.0.1:${config.port}`,
  };
}

/** Runs an offline command against the data dir and closes it. */
async function offline(opts: Record<string, string | undefined>, fn: (g: Granary) => Promise<void>): Promise<void> {
  const g = await offlineContext(configFrom(opts));
  try {
    await fn(g);
  } finally {
    await g.meta.close();
  }
}

async function serve(opts: Record<string, string | undefined>): Promise<void> {
  const running = await startGranary(configFrom(opts));
  const { g } = running;
  if (running.generatedKeys) {
    process.stdout.write(
      `Generated a root key pair (kept in ${g.config.dataDir}/credentials.json; shown once):\n` +
        `  AccessKey: ${g.keys.accessKey}\n  SecretKey: ${g.keys.secretKey}\n`,
    );
  }
  g.log.info({ url: running.url, publicUrl: g.publicUrl, dataDir: g.config.dataDir }, 'granary listening');
  const stop = (signal: string): void => {
    g.log.info({ signal }, 'shutting down: finishing in-flight requests');
    running
      .close()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        g.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  // No input may reach here (every stream Granary pipes has its errors handled; the test suite fails on any
  // uncaught error). Should a bug do it anyway, it is logged as one JSON line before the process ends.
  process.once('uncaughtException', (err) => {
    g.log.fatal({ err }, 'uncaught exception: the process ends (this is a bug; please report it)');
    process.exit(1);
  });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

/** Adds the data-dir flags shared by every command. */
function withDataDir(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', 'data directory (GRANARY_DATA_DIR, default ./data)')
    .option('--access-key <ak>', 'root AccessKey (GRANARY_ACCESS_KEY)')
    .option('--secret-key <sk>', 'root SecretKey (GRANARY_SECRET_KEY)');
}

/** `<bucket>:<key>` (the bucket is the text before the first `:`). */
function entryArg(text: string): EntryRef {
  const colon = text.indexOf(':');
  if (colon <= 0) throw new Error(`${JSON.stringify(text)} is not <bucket>:<key>`);
  return { bucket: text.slice(0, colon), key: text.slice(colon + 1) };
}

/** Operator commands on entries: stat, rm, cp, mv (root rights, offline on the data dir). */
function addEntryCommands(program: Command): void {
  withDataDir(program.command('stat <entry>').description('print an entry as JSON (<bucket>:<key>)')).action(
    (entry: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        process.stdout.write(`${toJson(await statEntry(g, entryArg(entry)))}\n`);
      }),
  );
  withDataDir(program.command('rm <entry...>').description('delete entries (<bucket>:<key> …)')).action(
    (entries: string[], opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        for (const e of entries) {
          await deleteEntry(g, entryArg(e));
          process.stdout.write(`deleted ${e}\n`);
        }
      }),
  );
  withDataDir(program.command('ls <bucket>').description('list entries: key, size, hash, MIME, putTime (100 ns)'))
    .option('--prefix <p>', 'only keys starting with p', '')
    .option('--delimiter <d>', 'roll keys up into common prefixes at d (shown ending with d)', '')
    .action((bucket: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        const pages = await streamObjects(g, g.keys.accessKey, {
          bucket,
          prefix: opts.prefix ?? '',
          delimiter: opts.delimiter ?? '',
          marker: '',
          limit: null,
          needParts: false,
        });
        for await (const lines of pages) {
          let out = '';
          for (const line of lines) {
            const it = line.item;
            out += it
              ? `${String(it.key)}\t${String(it.fsize)}\t${String(it.hash)}\t${String(it.mimeType)}\t${String(it.putTime)}\n`
              : `${line.dir}\n`;
          }
          process.stdout.write(out);
        }
      }),
    );
  const copyLike = (name: 'cp' | 'mv', fn: typeof copyEntry, verb: string): void => {
    withDataDir(program.command(`${name} <from> <to>`).description(`${verb} an entry (<bucket>:<key>; no bytes are copied)`))
      .option('--force', 'replace an existing target')
      .action((from: string, to: string, opts: Record<string, string | undefined> & { force?: boolean }) =>
        offline(opts, async (g) => {
          await fn(g, entryArg(from), entryArg(to), opts.force === true);
          process.stdout.write(`${from} -> ${to}\n`);
        }),
      );
  };
  copyLike('cp', copyEntry, 'copy');
  copyLike('mv', moveEntry, 'move');
}

/** Builds the command tree. */
export function buildCli(): Command {
  const program = new Command('granary').description('Self-hosted object storage speaking the Qiniu Kodo API');

  withDataDir(program.command('serve').description('start the server'))
    .option('--port <port>', 'TCP port (GRANARY_PORT, default 9000)')
    .option('--host <addr>', 'bind address (GRANARY_HOST, default 0.0.0.0)')
    .option('--public-url <url>', 'base URL advertised to clients (GRANARY_PUBLIC_URL)')
    .option('--log-level <level>', 'pino log level (GRANARY_LOG_LEVEL, default info)')
    .option('--outbound-allow <list>', 'CIDRs/hosts callbacks may reach (GRANARY_OUTBOUND_ALLOW)')
    .action(serve);

  const bucket = program.command('bucket').description('manage buckets');
  withDataDir(bucket.command('create <name>').description('create a bucket'))
    .option('--region <id>', 'region id (default GRANARY_REGION or z0)')
    .option('--private', 'make the bucket private')
    .option('--owner <ak>', "AccessKey of the owning account (default: the root key's)")
    .action((name: string, opts: Record<string, string | undefined> & { private?: boolean }) =>
      offline(opts, async (g) => {
        const owner = opts.owner ?? g.keys.accessKey;
        if (!g.keyIndex.pairOf(owner)) throw new Error(`unknown AccessKey ${owner}`);
        await createBucket(g, name, owner, opts.region);
        if (opts.private) await setBucketPrivate(g, name, true);
        process.stdout.write(`created bucket ${name}${opts.private ? ' (private)' : ''}\n`);
      }),
    );
  withDataDir(bucket.command('list').description('list buckets')).action((opts: Record<string, string | undefined>) =>
    offline(opts, async (g) => {
      for (const b of await g.meta.listBuckets()) {
        const owner = b.owner === g.keys.accessKey ? 'root' : b.owner;
        process.stdout.write(`${b.name}\t${b.region}\t${b.private ? 'private' : 'public'}\t${owner}\n`);
      }
    }),
  );
  withDataDir(bucket.command('delete <name>').description('delete an empty bucket')).action(
    (name: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        await dropBucket(g, name);
        process.stdout.write(`deleted bucket ${name}\n`);
      }),
  );
  withDataDir(bucket.command('nrop <name> <on|off>').description('enable or disable the nrop moderation fop for a bucket')).action(
    (name: string, state: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        if (state !== 'on' && state !== 'off') throw new Error(`expected on or off, got ${JSON.stringify(state)}`);
        await setBucketNrop(g, name, state === 'on');
        process.stdout.write(`nrop ${state === 'on' ? 'enabled' : 'disabled'} for bucket ${name}\n`);
      }),
  );

  withDataDir(bucket.command('style <bucket> <name> <fop>').description('set an image style: <key><sep><name> serves <fop> on <key>')).action(
    (bucketName: string, name: string, fop: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        await setStyle(g, bucketName, name, fop);
        process.stdout.write(`style ${name} of bucket ${bucketName}: ${fop}\n`);
      }),
  );
  withDataDir(bucket.command('unstyle <bucket> <name>').description('remove an image style')).action(
    (bucketName: string, name: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        await removeStyle(g, bucketName, name);
        process.stdout.write(`removed style ${name} of bucket ${bucketName}\n`);
      }),
  );
  withDataDir(bucket.command('separator <bucket> <sep>').description('set the style separators (default -; several allowed: granary bucket separator [options] <bucket> -- -_!)')).action(
    (bucketName: string, sep: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        await setSeparator(g, bucketName, sep);
        process.stdout.write(`style separators of bucket ${bucketName}: ${sep}\n`);
      }),
  );
  withDataDir(bucket.command('styles <bucket>').description('list image styles: separators, then <name>\t<fop> lines')).action(
    (bucketName: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        const b = await g.meta.getBucket(bucketName);
        if (!b) throw Errors.noSuchBucket(bucketName);
        const st = stylesOf(b);
        process.stdout.write(`separator\t${st.separator}\n`);
        for (const [name, fop] of Object.entries(st.styles).sort(([a], [b2]) => (a < b2 ? -1 : 1))) process.stdout.write(`${name}\t${fop}\n`);
      }),
  );

  const domain = program.command('domain').description('manage download domains');
  withDataDir(domain.command('bind <domain> <bucket>').description('serve <bucket> at http://<domain>/<key>')).action(
    (name: string, bucketName: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        const d = await bindDomain(g, name, bucketName);
        process.stdout.write(`bound ${d.domain} to bucket ${bucketName}\n`);
      }),
  );
  withDataDir(domain.command('list <bucket>').description('list domains bound to a bucket')).action(
    (bucketName: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        for (const d of await g.meta.domainsOf(bucketName)) process.stdout.write(`${d.domain}\n`);
      }),
  );

  addEntryCommands(program);

  withDataDir(program.command('scrub').description('check every stored blob against its checksums and report corrupt entries (exit status 2 when any)'))
    .option('--rate <bytes>', 'read at most this many bytes per second (default: as fast as the disk allows)')
    .option('--json', 'print the report as one JSON document')
    .action((opts: Record<string, string | undefined> & { json?: boolean }) =>
      offline(opts, async (g) => {
        const rate = opts.rate === undefined ? undefined : Number(opts.rate);
        if (rate !== undefined && (!Number.isSafeInteger(rate) || rate < 1)) throw new Error('--rate must be a positive integer (bytes per second)');
        const started = Date.now();
        const r = await scrubPass(g, rate ? { bytesPerSecond: rate } : {});
        const seconds = (Date.now() - started) / 1000;
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ blobs: r.blobs, bytes: r.bytes, upgraded: r.upgraded, seconds, corrupt: r.corrupt })}\n`);
        } else {
          for (const f of r.corrupt) {
            const what = f.bucket !== undefined ? `${f.bucket}:${f.key ?? ''}` : `blob ${f.blobId}`;
            process.stdout.write(`corrupt\t${what}\t${f.reason}\n`);
          }
          const mbps = seconds > 0 ? (r.bytes / 1e6 / seconds).toFixed(1) : '-';
          process.stdout.write(
            `scrubbed ${r.blobs} blobs, ${r.bytes} bytes in ${seconds.toFixed(1)} s (${mbps} MB/s): ${r.corrupt.length} corrupt, ${r.upgraded} given checksums\n`,
          );
        }
        if (r.corrupt.length > 0) process.exitCode = 2;
      }),
    );

  const pipeline = program.command('pipeline').description('job pipelines (named queues of persistent processing)');
  withDataDir(pipeline.command('create <name>').description('create a pipeline, or change its concurrency'))
    .option('--concurrency <n>', 'jobs of it running at once, 0..64 (0 pauses it; default GRANARY_JOB_CONCURRENCY)')
    .action((name: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        const concurrency = opts.concurrency === undefined ? undefined : parseConcurrency(opts.concurrency);
        const { result, pipeline: p } = await putPipeline(g, name, concurrency);
        process.stdout.write(`${result} pipeline ${p.name} (concurrency ${p.concurrency})\n`);
      }),
    );
  withDataDir(pipeline.command('list').description('list pipelines: name and concurrency')).action(
    (opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        for (const p of await listPipelines(g)) process.stdout.write(`${p.name}\t${p.concurrency}\n`);
      }),
  );

  const keys = program.command('keys').description('key pairs: the root pair and account pairs');
  withDataDir(keys.command('create').description('create an account key pair (it may act only on its own buckets)')).action(
    (opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        const pair = await g.keyIndex.create(Math.floor(Date.now() / 1000));
        process.stdout.write(`AccessKey: ${pair.accessKey}\nSecretKey: ${pair.secretKey}\n`);
      }),
  );
  withDataDir(keys.command('list').description('list account AccessKeys')).action((opts: Record<string, string | undefined>) =>
    offline(opts, async (g) => {
      process.stdout.write(`${g.keys.accessKey}\troot\n`);
      for (const k of await g.meta.listAccessKeys()) process.stdout.write(`${k.accessKey}\taccount\n`);
    }),
  );
  withDataDir(keys.command('delete <ak>').description('delete an account key pair')).action(
    (ak: string, opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        if (!(await g.meta.deleteAccessKey(ak))) throw new Error(`no account key ${ak}`);
        process.stdout.write(`deleted key ${ak}\n`);
      }),
  );
  withDataDir(keys.command('show').description('print the root AccessKey and SecretKey')).action(
    (opts: Record<string, string | undefined>) =>
      offline(opts, async (g) => {
        process.stdout.write(`AccessKey: ${g.keys.accessKey}\nSecretKey: ${g.keys.secretKey}\n`);
      }),
  );
  return program;
}

/** Entry point used by bin/granary.js. Catalogue errors print their message and exit 1. */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    const detail = isKodoError(err) ? `${err.message} (${err.status})` : (err as Error).message;
    process.stderr.write(`granary: ${detail}\n`);
    process.exit(1);
  }
}
