/**
 * What every offline command shares: configuration from the environment and the flags, a Granary context over the
 * configured stores (the data dir, or in cluster mode the PostgreSQL metadata and S3 blobs of GRANARY_METADATA and
 * GRANARY_BLOBS; keys; no server), and the data-dir flags.
 */
import { parseAllowList } from '../outbound/guard.js';
import { stat } from 'node:fs/promises';
import pino from 'pino';
import { KeyIndex } from '../auth/key-index.js';
import { loadRootKeys } from '../auth/keys.js';
import { DomainIndex } from '../buckets/domain-index.js';
import { loadConfig, type Config } from '../config.js';
import type { Granary } from '../context.js';
import { FopPools } from '../fops/pools.js';
import type { EntryRef } from '../objects/manage/ref.js';
import { systemClock } from '../ports/clock.js';
import { SETTINGS } from '../settings-table.js';
import { FreeSpace } from '../objects/free-space.js';
import { openStores } from '../store/open.js';

/** Options of a command as commander gives them (flags by camel-case name; switches are booleans). */
export type Opts = Record<string, string | undefined> & { createDataDir?: boolean | string };

/** Flag → environment variable it mirrors (the table's `flag`s). */
const FLAG_ENV: Record<string, string> = Object.fromEntries(
  SETTINGS.flatMap((s) => (s.flag === undefined ? [] : [[s.flag, s.name] as const])),
);

/** Config from the environment, overridden by the flags given. */
export function configFrom(opts: Opts): Config {
  const env: Opts = { ...process.env };
  for (const [flag, name] of Object.entries(FLAG_ENV)) if (opts[flag] !== undefined) env[name] = opts[flag];
  return loadConfig(env);
}

/**
 * Refuses a data dir that does not exist (an offline command run in the wrong folder would otherwise create
 * `./data` there and answer from an empty store, with a freshly generated key pair). `create`: make it instead
 * (`--create-data-dir`). In cluster mode (GRANARY_METADATA=postgres://… and GRANARY_BLOBS=s3://…) the data dir
 * holds no data and a missing one is fine. Names the dir on stderr when stderr is a terminal. Throws an Error naming the dir.
 */
export async function requireDataDir(config: Config, create = false): Promise<void> {
  const dir = config.dataDir;
  const st = await stat(dir).catch(() => undefined);
  if (st && !st.isDirectory()) throw new Error(`data dir ${dir} is not a directory`);
  // A cluster node's data (PostgreSQL metadata, S3 blobs) is elsewhere: its data dir is only local scratch, made on
  // demand, and no store can be mistaken for an empty one.
  const scratchOnly = config.metadata.kind === 'postgres' && config.blobs.kind === 's3';
  if (!st && !create && !scratchOnly) {
    throw new Error(
      `data dir ${dir} does not exist: give the data dir of your server with --data-dir <dir> (or GRANARY_DATA_DIR), ` +
        `or --create-data-dir to start a new one; for a remote bucket use <remote>:<bucket>/<key> (granary remote add)`,
    );
  }
  if (process.stderr.isTTY) process.stderr.write(`data dir: ${dir}${config.metadata.kind === 'postgres' ? ' (metadata in PostgreSQL)' : ''}\n`);
}

/**
 * A context for offline commands: the configured stores (store/open.ts), no server. The data dir must exist
 * (requireDataDir) unless `create`.
 */
export async function offlineContext(config: Config, create = false): Promise<Granary> {
  await requireDataDir(config, create);
  const { meta, blobs } = await openStores(config);
  const { keys } = await loadRootKeys(config, {
    ...(config.accessKey ? { accessKey: config.accessKey } : {}),
    ...(config.secretKey ? { secretKey: config.secretKey } : {}),
  }, meta);
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
    // The server's guard policy: commands that check destinations (replication add) judge them as the server will.
    outbound: { allow: parseAllowList(config.outboundAllow) },
    domains: new DomainIndex(meta, config),
    fopPools: new FopPools({ image: 1, video: 1 }),
    fopTools: {},
    publicUrl: config.publicUrl ?? `http://127.0.0.1:${config.port}`,
  };
}

/** Runs an offline command against the configured stores and closes them. */
export async function offline(opts: Opts, fn: (g: Granary) => Promise<void>): Promise<void> {
  const g = await offlineContext(configFrom(opts), opts.createDataDir !== undefined && opts.createDataDir !== false);
  try {
    await fn(g);
  } finally {
    await g.meta.close();
    await g.blobs.close?.();
  }
}

export { withDataDir } from './data-dir-flags.js';

/** `<bucket>:<key>` (the bucket is the text before the first `:`). */
export function entryArg(text: string): EntryRef {
  const colon = text.indexOf(':');
  if (colon <= 0) throw new Error(`${JSON.stringify(text)} is not <bucket>:<key>`);
  return { bucket: text.slice(0, colon), key: text.slice(colon + 1) };
}
