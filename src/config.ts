/**
 * Configuration: environment variables (the CLI's flags mirror them) → one typed, validated object.
 * Every variable is declared once in src/settings-table.ts (name, type, default, unit, description): integers take
 * their default and range from it, strings their default, and the parsers below are named by it.
 * docs/reference/configuration.md is generated from that table (scripts/gen-config-docs.ts).
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { advertisedHostsVar } from './config-hosts.js';
import type { BlobsConfig, Config, LogFormat, MetadataConfig, S3BlobsConfig } from './config-types.js';
import { intSetting, setting, textSetting } from './settings-table.js';
import { parseTrustProxy } from './trust-proxy.js';

export type { BlobsConfig, Config, FsBlobsConfig, LogFormat, MetadataConfig, S3BlobsConfig } from './config-types.js';

const LOG_FORMATS: readonly LogFormat[] = ['pretty', 'json', 'auto'];

type Env = Record<string, string | undefined>;

/** An integer setting: its default and range come from the table (`'cores'` = `os.availableParallelism()`). */
function intVar(env: Env, name: string): number {
  const { min, max, default: fallback } = intSetting(name);
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback === 'cores' ? availableParallelism() : fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** GRANARY_MIN_FREE_BYTES: `<bytes>` or `<percent>%`; default the smaller of 1 GiB and 5%. */
function reserveVar(env: Env): Config['minFree'] {
  const raw = textVar(env, 'GRANARY_MIN_FREE_BYTES');
  if (raw === undefined) return { bytes: 1024 ** 3, percent: 5 };
  if (/^\d+$/.test(raw) && Number.isSafeInteger(Number(raw))) return { bytes: Number(raw) };
  const m = /^(\d+(?:\.\d+)?)%$/.exec(raw);
  if (m && Number(m[1]) <= 100) return { percent: Number(m[1]) };
  throw new Error(`GRANARY_MIN_FREE_BYTES must be a byte count or a percentage such as 5%, got ${JSON.stringify(raw)}`);
}

const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** GRANARY_BLOBS (+ GRANARY_S3_* and the AWS_* credentials): see Config.blobs. */
function blobsVar(env: Env): BlobsConfig {
  const raw = textVar(env, 'GRANARY_BLOBS');
  if (raw === undefined) return { kind: 'fs' };
  const bad = (why: string): Error =>
    new Error(`GRANARY_BLOBS must look like s3://<bucket>[/<prefix>]?endpoint=http://host:port&region=…&forcePathStyle=true: ${why}`);
  const m = /^s3:\/\/([^/?#]+)(\/[^?#]*)?(?:\?([^#]*))?$/.exec(raw);
  if (!m) throw bad(`got ${JSON.stringify(raw)}`);
  const bucket = m[1] ?? '';
  if (!BUCKET_RE.test(bucket)) throw bad(`${JSON.stringify(bucket)} is not an S3 bucket name`);
  let path: string;
  try {
    path = decodeURIComponent((m[2] ?? '').replace(/^\/+|\/+$/g, ''));
  } catch {
    throw bad('the prefix is not valid percent-encoding');
  }
  const params = new URLSearchParams(m[3] ?? '');
  for (const name of params.keys()) {
    if (!['endpoint', 'region', 'forcePathStyle'].includes(name)) throw bad(`unknown parameter ${JSON.stringify(name)}`);
  }
  const endpoint = params.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(endpoint)) {
    throw bad(`endpoint must be http(s)://host[:port], got ${JSON.stringify(endpoint)}`);
  }
  const pathStyle = params.get('forcePathStyle');
  if (pathStyle !== null && pathStyle !== 'true' && pathStyle !== 'false') throw bad('forcePathStyle must be true or false');
  const cfg: S3BlobsConfig = {
    kind: 's3',
    bucket,
    prefix: path === '' ? '' : `${path}/`,
    region: params.get('region') || 'us-east-1',
    forcePathStyle: pathStyle === null ? endpoint !== undefined : pathStyle === 'true',
    cacheBytes: intVar(env, 'GRANARY_S3_CACHE_SIZE'),
    partBytes: intVar(env, 'GRANARY_S3_PART_SIZE'),
    staleUploadHours: intVar(env, 'GRANARY_S3_STALE_UPLOAD_HOURS'),
    timeoutSeconds: intVar(env, 'GRANARY_S3_TIMEOUT'),
    connectTimeoutSeconds: intVar(env, 'GRANARY_S3_CONNECT_TIMEOUT'),
  };
  if (endpoint !== undefined) cfg.endpoint = endpoint.replace(/\/$/, '');
  const accessKeyId = textVar(env, 'AWS_ACCESS_KEY_ID');
  const secretAccessKey = textVar(env, 'AWS_SECRET_ACCESS_KEY');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new Error('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together');
  }
  if (accessKeyId !== undefined && secretAccessKey !== undefined) {
    const sessionToken = textVar(env, 'AWS_SESSION_TOKEN');
    cfg.credentials = { accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) };
  }
  return cfg;
}

/** GRANARY_METADATA: see Config.metadata. The URL is never echoed in errors (it may hold a password). */
function metadataVar(env: Env): MetadataConfig {
  const raw = textVar(env, 'GRANARY_METADATA');
  if (raw === undefined) return { kind: 'sqlite' };
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  const expected = 'GRANARY_METADATA must be unset (the embedded SQLite in the data dir) or a postgres://user:pass@host:port/db URL';
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    throw new Error(`${expected}, got ${scheme === undefined ? 'no URL scheme' : `the scheme ${JSON.stringify(`${scheme}:`)}`}`);
  }
  if (!URL.canParse(raw)) throw new Error(`${expected}: the value is not a valid URL`);
  return { kind: 'postgres', url: raw };
}

function logFormatVar(env: Env): LogFormat {
  const raw = textVar(env, 'GRANARY_LOG_FORMAT') ?? 'auto';
  if ((LOG_FORMATS as readonly string[]).includes(raw)) return raw as LogFormat;
  throw new Error(`GRANARY_LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(raw)}`);
}

/** A string setting (empty counts as unset); the name must be declared in the table. */
function textVar(env: Env, name: string): string | undefined {
  setting(name);
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** `{ [field]: value }` when the text setting is set, else `{}` (optional Config fields). */
function optionalText<F extends string>(env: Env, name: string, field: F): Partial<Record<F, string>> {
  const v = textVar(env, name);
  return v === undefined ? {} : ({ [field]: v } as Record<F, string>);
}

/** A string setting with the table's default when unset. */
function textOrDefault(env: Env, name: string): string {
  const fallback = textSetting(name).default;
  if (fallback === undefined) throw new Error(`${name} has no default in src/settings-table.ts`);
  return textVar(env, name) ?? fallback;
}

/** Reads and validates the configuration; throws an Error naming the variable on a bad value. */
export function loadConfig(env: Env = process.env): Config {
  const accessKey = textVar(env, 'GRANARY_ACCESS_KEY');
  const secretKey = textVar(env, 'GRANARY_SECRET_KEY');
  if ((accessKey === undefined) !== (secretKey === undefined)) {
    throw new Error('GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY must be set together');
  }
  const publicUrl = textVar(env, 'GRANARY_PUBLIC_URL');
  if (publicUrl !== undefined && !/^https?:\/\/[^/]+$/.test(publicUrl.replace(/\/+$/, ''))) {
    throw new Error(`GRANARY_PUBLIC_URL must look like http://host[:port], got ${JSON.stringify(publicUrl)}`);
  }
  const cfg: Config = {
    port: intVar(env, 'GRANARY_PORT'),
    host: textOrDefault(env, 'GRANARY_HOST'),
    dataDir: resolve(textOrDefault(env, 'GRANARY_DATA_DIR')),
    region: textOrDefault(env, 'GRANARY_REGION'),
    advertisedHosts: advertisedHostsVar(env),
    maxObjectBytes: intVar(env, 'GRANARY_MAX_OBJECT_SIZE'),
    inlineMaxBytes: intVar(env, 'GRANARY_INLINE_MAX'),
    readCacheBytes: intVar(env, 'GRANARY_READ_CACHE_SIZE'),
    sqliteCacheBytes: intVar(env, 'GRANARY_SQLITE_CACHE_SIZE'),
    maxBodyBytes: intVar(env, 'GRANARY_MAX_BODY_SIZE'),
    callbackTimeoutSeconds: intVar(env, 'GRANARY_CALLBACK_TIMEOUT'),
    outboundAllow: textOrDefault(env, 'GRANARY_OUTBOUND_ALLOW'),
    cdnDomains: (textVar(env, 'GRANARY_CDN_DOMAINS') ?? '').split(',').map((d) => d.trim().toLowerCase().replace(/\.$/, '')).filter((d) => d !== ''),
    lingerTimeoutSeconds: intVar(env, 'GRANARY_LINGER_TIMEOUT'),
    fetchTimeoutSeconds: intVar(env, 'GRANARY_FETCH_TIMEOUT'),
    fetchMaxBytes: intVar(env, 'GRANARY_FETCH_MAX_SIZE'),
    fetchConcurrency: intVar(env, 'GRANARY_FETCH_CONCURRENCY'),
    fetchRetryMs: intVar(env, 'GRANARY_FETCH_RETRY_MS'),
    fopMaxSourceBytes: intVar(env, 'GRANARY_FOP_MAX_SOURCE'),
    fopMaxSide: intVar(env, 'GRANARY_FOP_MAX_SIDE'),
    fopMaxPixels: intVar(env, 'GRANARY_FOP_MAX_PIXELS'),
    fopMaxFrames: intVar(env, 'GRANARY_FOP_MAX_FRAMES'),
    fopMaxResourceBytes: intVar(env, 'GRANARY_FOP_MAX_RESOURCE'),
    fopTimeoutSeconds: intVar(env, 'GRANARY_FOP_TIMEOUT'),
    fopConcurrency: intVar(env, 'GRANARY_FOP_CONCURRENCY'),
    fopCacheBytes: intVar(env, 'GRANARY_FOP_CACHE_SIZE'),
    videoConcurrency: intVar(env, 'GRANARY_VIDEO_CONCURRENCY'),
    videoMaxSourceBytes: intVar(env, 'GRANARY_VIDEO_MAX_SOURCE'),
    videoThreads: intVar(env, 'GRANARY_VIDEO_THREADS'),
    mkzipMaxFiles: intVar(env, 'GRANARY_MKZIP_MAX_FILES'),
    mkzipMaxBytes: intVar(env, 'GRANARY_MKZIP_MAX_BYTES'),
    docMaxSourceBytes: intVar(env, 'GRANARY_DOC_MAX_SOURCE'),
    md2htmlMaxSourceBytes: intVar(env, 'GRANARY_MD2HTML_MAX_SOURCE'),
    jobTimeoutSeconds: intVar(env, 'GRANARY_JOB_TIMEOUT'),
    jobConcurrency: intVar(env, 'GRANARY_JOB_CONCURRENCY'),
    jobAttempts: intVar(env, 'GRANARY_JOB_ATTEMPTS'),
    notifyAttempts: intVar(env, 'GRANARY_NOTIFY_ATTEMPTS'),
    notifyRetryMs: intVar(env, 'GRANARY_NOTIFY_RETRY_MS'),
    eventAttempts: intVar(env, 'GRANARY_EVENT_ATTEMPTS'),
    eventRetryMs: intVar(env, 'GRANARY_EVENT_RETRY_MS'),
    eventConcurrency: intVar(env, 'GRANARY_EVENT_CONCURRENCY'),
    replicationConcurrency: intVar(env, 'GRANARY_REPLICATION_CONCURRENCY'),
    replicationRetryMs: intVar(env, 'GRANARY_REPLICATION_RETRY_MS'),
    replicationMaxRetryMs: intVar(env, 'GRANARY_REPLICATION_MAX_RETRY_MS'),
    replicationFailAfter: intVar(env, 'GRANARY_REPLICATION_FAIL_AFTER'),
    replicationBacklog: intVar(env, 'GRANARY_REPLICATION_BACKLOG'),
    replicationMultipartBytes: intVar(env, 'GRANARY_REPLICATION_MULTIPART_BYTES'),
    dateWindowSeconds: intVar(env, 'GRANARY_DATE_WINDOW'),
    iamAuditMax: intVar(env, 'GRANARY_IAM_AUDIT_MAX'),
    expirySweepSeconds: intVar(env, 'GRANARY_EXPIRY_INTERVAL'),
    minFree: reserveVar(env),
    scrubBytesPerSecond: intVar(env, 'GRANARY_SCRUB_BYTES_PER_SEC'),
    scrubIntervalDays: intVar(env, 'GRANARY_SCRUB_INTERVAL_DAYS'),
    consoleSessionMinutes: intVar(env, 'GRANARY_CONSOLE_SESSION_MINUTES'),
    consoleSampleSeconds: intVar(env, 'GRANARY_CONSOLE_SAMPLE_SECONDS'),
    workers: intVar(env, 'GRANARY_WORKERS'),
    workerOldSpaceMb: intVar(env, 'GRANARY_WORKER_OLD_SPACE_MB'),
    workerSemiSpaceMb: intVar(env, 'GRANARY_WORKER_SEMI_SPACE_MB'),
    idleGcSeconds: intVar(env, 'GRANARY_IDLE_GC_SECONDS'),
    leaseSeconds: intVar(env, 'GRANARY_LEASE_SECONDS'),
    stopTimeoutSeconds: intVar(env, 'GRANARY_STOP_TIMEOUT'),
    logLevel: textOrDefault(env, 'GRANARY_LOG_LEVEL'),
    blobs: blobsVar(env),
    metadata: metadataVar(env),
    pgPool: intVar(env, 'GRANARY_PG_POOL'),
    pgTimeoutSeconds: intVar(env, 'GRANARY_PG_TIMEOUT'),
    // Loopback unless set: the console is an administration surface (docs/guides/console.md).
    consoleHost: textVar(env, 'GRANARY_CONSOLE_HOST') ?? '127.0.0.1',
    s3Host: textVar(env, 'GRANARY_S3_HOST') ?? textOrDefault(env, 'GRANARY_HOST'),
    trustProxy: parseTrustProxy(env.GRANARY_TRUST_PROXY),
    ...optionalText(env, 'GRANARY_MASTER_KEY_FILE', 'masterKeyFile'),
    ...optionalText(env, 'GRANARY_MASTER_KEY', 'masterKey'),
    logFormat: logFormatVar(env),
  };
  const consolePort = intVar(env, 'GRANARY_CONSOLE_PORT');
  if (consolePort !== 0) cfg.consolePort = consolePort;
  const s3Port = intVar(env, 'GRANARY_S3_PORT');
  if (s3Port !== 0) cfg.s3Port = s3Port;
  const s3Domain = textVar(env, 'GRANARY_S3_DOMAIN');
  if (s3Domain !== undefined) cfg.s3Domain = s3Domain.toLowerCase().replace(/^\.+|\.+$/g, '');
  const sourceDomain = textVar(env, 'GRANARY_SOURCE_DOMAIN');
  if (sourceDomain !== undefined) cfg.sourceDomain = sourceDomain.toLowerCase().replace(/^\.+|\.+$/g, '');
  if (accessKey !== undefined && secretKey !== undefined) {
    cfg.accessKey = accessKey;
    cfg.secretKey = secretKey;
  }
  const tools = { ffmpegPath: 'GRANARY_FFMPEG', ffprobePath: 'GRANARY_FFPROBE', heifConvertPath: 'GRANARY_HEIF_CONVERT', sofficePath: 'GRANARY_SOFFICE' } as const;
  for (const [field, name] of Object.entries(tools) as [keyof typeof tools, string][]) {
    const v = textVar(env, name);
    if (v !== undefined) cfg[field] = v;
  }
  const metricsToken = textVar(env, 'GRANARY_METRICS_TOKEN');
  if (metricsToken !== undefined) cfg.metricsToken = metricsToken;
  if (publicUrl !== undefined) cfg.publicUrl = publicUrl.replace(/\/+$/, '');
  return cfg;
}
