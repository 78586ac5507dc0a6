/**
 * Every setting Granary reads from the environment, declared once: name, type, default, unit and description.
 * src/config.ts reads each setting through this table (integers take their default and range from it; the
 * settings with a parser of their own name it), scripts/gen-config-docs.ts writes docs/reference/configuration.md
 * from it, and test/unit/config-docs.test.ts checks that the page, this table and the names read in src/ agree.
 *
 * The `Config` type (src/config-types.ts) keeps the field each setting fills; its docstrings say what a field holds,
 * this table says what an operator sets.
 */

import type { Config, S3BlobsConfig } from './config-types.js';

/** A field of `Config`, or of the S3 blobs configuration under `blobs`. */
export type ConfigField = keyof Config | `blobs.${Exclude<keyof S3BlobsConfig, 'kind'>}`;

/** Sections of the configuration page, in page order. */
export const SETTING_GROUPS = [
  'Listeners and addresses',
  'Keys',
  'Storage',
  'Blobs in an S3 bucket',
  'Metadata on PostgreSQL',
  'Requests and uploads',
  'Outbound requests and fetch',
  'Image processing',
  'Audio and video',
  'Files and documents',
  'Persistent jobs and notifications',
  'Bucket event notifications',
  'Bucket replication',
  'Background work',
  'Workers and processes',
  'Console, metrics and logs',
  'Transfer client',
] as const;
export type SettingGroup = (typeof SETTING_GROUPS)[number];

interface SettingBase {
  /** The environment variable. */
  readonly name: string;
  readonly group: SettingGroup;
  /** The field of `Config` the setting fills (`blobs.<field>` for the S3 ones); absent: not read by loadConfig. */
  readonly field?: ConfigField;
  /** The flag of `granary serve` (and the offline commands) that overrides the variable, camel-cased as commander gives it. */
  readonly flag?: string;
  /** Unit of the value, when it has one (`bytes`, `seconds`, …). */
  readonly unit?: string;
  /** What the setting does, for operators (Markdown, one paragraph). */
  readonly description: string;
}

/** An integer read by config.ts's `intVar`: unset or empty → `default`; outside `min`…`max` → the start fails. */
export interface IntSetting extends SettingBase {
  readonly kind: 'int';
  readonly min: number;
  readonly max: number;
  /** The value when unset; `'cores'` = `os.availableParallelism()`. */
  readonly default: number | 'cores';
}

/** A string taken as it is (empty counts as unset): unset → `default`, or absent from the Config when none. */
export interface TextSetting extends SettingBase {
  readonly kind: 'text';
  /** The value when unset; absent: the Config field stays undefined and `defaultText` says what happens. */
  readonly default?: string;
  readonly defaultText?: string;
  /** The type shown in the docs (default `string`). */
  readonly type?: string;
}

/** A setting with a parser of its own (named by `parser`, a function of src/config.ts or a module of its own). */
export interface CustomSetting extends SettingBase {
  readonly kind: 'custom';
  /** The type shown in the docs. */
  readonly type: string;
  /** Where the value is parsed: `function` (`file`). */
  readonly parser: string;
  /** What happens when unset (Markdown). */
  readonly defaultText: string;
}

export type Setting = IntSetting | TextSetting | CustomSetting;

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const MAX = Number.MAX_SAFE_INTEGER;

const HOSTS_DESCRIPTION = (service: string): string =>
  `hosts the region queries (\`/v1\`–\`/v4/query\`, \`/regions\`) advertise for the \`${service}\` service: comma-separated \`host[:port]\` (no scheme, no path), main host first, then backups the SDKs switch to when it fails (several nodes, a load balancer and a direct name, …)`;

const hostsSetting = (service: string, extra = ''): CustomSetting => ({
  kind: 'custom',
  name: `GRANARY_${service.toUpperCase()}_HOSTS`,
  field: 'advertisedHosts',
  group: 'Listeners and addresses',
  type: 'list of `host[:port]`',
  parser: '`advertisedHostsVar` (src/config-hosts.ts)',
  defaultText: 'the host of `GRANARY_PUBLIC_URL`',
  description: HOSTS_DESCRIPTION(service) + extra,
});

/** The settings, in page order within each group. */
export const SETTINGS: readonly Setting[] = [
  // Listeners and addresses
  {
    kind: 'int', name: 'GRANARY_PORT', field: 'port', flag: 'port', group: 'Listeners and addresses', min: 0, max: 65535, default: 9000, unit: 'TCP port',
    description: 'TCP port of the Kodo API listener (every role); `0` = any free port',
  },
  {
    kind: 'text', name: 'GRANARY_HOST', field: 'host', flag: 'host', group: 'Listeners and addresses', default: '0.0.0.0', type: 'address',
    description: 'bind address of the Kodo API listener',
  },
  {
    kind: 'custom', name: 'GRANARY_PUBLIC_URL', field: 'publicUrl', flag: 'publicUrl', group: 'Listeners and addresses', type: 'URL `http(s)://host[:port]`',
    parser: '`loadConfig` (src/config.ts)', defaultText: '`http://127.0.0.1:<port>`',
    description: 'base URL advertised to clients (region query, `host` fields), without a path (a trailing `/` is dropped); the web console\'s links and uploads use it too (unset: the host name the browser used for the console, with the Kodo API port)',
  },
  {
    kind: 'text', name: 'GRANARY_REGION', field: 'region', group: 'Listeners and addresses', default: 'z0', type: 'region id',
    description: 'region id answered by the region query and given to new buckets',
  },
  hostsSetting('up'),
  hostsSetting('io', '; `io` also answers `io_src`'),
  hostsSetting('rs'),
  hostsSetting('rsf'),
  hostsSetting('api'),
  hostsSetting('uc'),
  {
    kind: 'int', name: 'GRANARY_CONSOLE_PORT', field: 'consolePort', flag: 'consolePort', group: 'Listeners and addresses', min: 0, max: 65535, default: 9001, unit: 'TCP port',
    description: 'TCP port of the console listener (web console and `/metrics`); `0` disables it. With workers the primary listens on it and hands connections to the workers; a port that cannot be bound (this one or `GRANARY_PORT`) stops the start with exit 1, the address and the reason, before a key pair is generated',
  },
  {
    kind: 'custom', name: 'GRANARY_CONSOLE_HOST', field: 'consoleHost', flag: 'consoleHost', group: 'Listeners and addresses', type: 'address',
    parser: '`loadConfig` (src/config.ts)', defaultText: '`127.0.0.1`',
    description: 'bind address of the console listener; unset, it is loopback only (`127.0.0.1`) whatever `GRANARY_HOST` is, because the console and `/metrics` are an administration surface: set `0.0.0.0` (or one address) to reach it from other machines, ideally behind TLS (docs/operations/console-security.md)',
  },
  {
    kind: 'int', name: 'GRANARY_S3_PORT', field: 's3Port', flag: 's3Port', group: 'Listeners and addresses', min: 0, max: 65535, default: 9002, unit: 'TCP port',
    description: 'TCP port of the S3 listener (the AWS S3 API over the same buckets: docs/reference/s3-compatibility.md); `0` disables it. With workers the primary listens on it and hands connections to the workers, like the other ports',
  },
  {
    kind: 'custom', name: 'GRANARY_S3_HOST', field: 's3Host', flag: 's3Host', group: 'Listeners and addresses', type: 'address',
    parser: '`loadConfig` (src/config.ts)', defaultText: '`GRANARY_HOST`',
    description: 'bind address of the S3 listener',
  },
  {
    kind: 'custom', name: 'GRANARY_S3_DOMAIN', field: 's3Domain', flag: 's3Domain', group: 'Listeners and addresses', type: 'domain',
    parser: '`loadConfig` (src/config.ts)', defaultText: 'unset (path style only)',
    description: 'domain of the S3 endpoint for virtual-hosted-style requests: `<bucket>.<domain>` names the bucket (e.g. `s3.example.com`; point a wildcard DNS record at Granary); path-style requests are always served',
  },
  {
    kind: 'custom', name: 'GRANARY_SOURCE_DOMAIN', field: 'sourceDomain', flag: 'sourceDomain', group: 'Listeners and addresses', type: 'domain',
    parser: '`loadConfig` (src/config.ts)', defaultText: 'unset (no per-bucket source domain)',
    description: 'parent domain of every bucket\'s default source domain (Kodo\'s io-src domain): `<bucket>.<domain>` serves the bucket\'s objects at `/<key>` on the Kodo port, as a bound domain does, and region queries for a bucket answer it as `io_src` (e.g. `src.example.com`; point a wildcard DNS record at Granary). Unset: `io_src` names the bucket\'s bound domains that are not CDN domains, else the public URL\'s host',
  },
  {
    kind: 'custom', name: 'GRANARY_CDN_DOMAINS', field: 'cdnDomains', flag: 'cdnDomains', group: 'Listeners and addresses', type: 'comma-separated domains, `*.suffix` allowed',
    parser: '`loadConfig` (src/config.ts)', defaultText: 'unset (none)',
    description: 'bound download domains that a CDN serves in front of Granary (Kodo\'s CDN domains): a bucket\'s referer anti-leech rules always apply on them, and on every other address (Granary\'s own host, the source domains, other bound domains) only when the bucket\'s `source_enabled` is 1. `*.cdn.example.com` names every subdomain',
  },
  {
    kind: 'custom', name: 'GRANARY_TRUST_PROXY', field: 'trustProxy', group: 'Listeners and addresses', type: '`true`, `false` or a list of addresses',
    parser: '`parseTrustProxy` (src/trust-proxy.ts)', defaultText: 'unset (`false`)',
    description: 'reverse proxies in front of the console listener whose `X-Forwarded-For`/`-Proto`/`-Host` are believed: `false`, `true` (every peer), or a comma-separated list of addresses, CIDR blocks, `loopback`, `linklocal`, `uniquelocal`',
  },

  // Keys
  {
    kind: 'custom', name: 'GRANARY_ACCESS_KEY', field: 'accessKey', flag: 'accessKey', group: 'Keys', type: 'string', parser: '`loadConfig` (src/config.ts)',
    defaultText: 'generated', description: 'AccessKey of the root key pair (set both `GRANARY_ACCESS_KEY` and `GRANARY_SECRET_KEY` or neither); unset: generated at the first start and kept in the data dir (in cluster mode, in the metadata database)',
  },
  {
    kind: 'custom', name: 'GRANARY_SECRET_KEY', field: 'secretKey', flag: 'secretKey', group: 'Keys', type: 'string', parser: '`loadConfig` (src/config.ts)',
    defaultText: 'generated', description: 'SecretKey of the root key pair (set both `GRANARY_ACCESS_KEY` and `GRANARY_SECRET_KEY` or neither)',
  },
  {
    kind: 'text', name: 'GRANARY_MASTER_KEY_FILE', field: 'masterKeyFile', group: 'Keys', type: 'path',
    defaultText: 'unset: blobs are stored unencrypted',
    description: 'file holding the master key of encryption at rest: 32 random bytes as 64 hex characters or base64 (`openssl rand -hex 32 > master.key`). Set, every new blob (files, inline objects, parts, pieces, the S3 backend\'s objects) is encrypted with a data key of its own wrapped by this key, and blobs from before stay readable; once set, a start without it or with another key is refused. Losing it loses every encrypted object (docs/reference/encryption.md)',
  },
  {
    kind: 'text', name: 'GRANARY_MASTER_KEY', field: 'masterKey', group: 'Keys', type: 'key',
    defaultText: 'unset',
    description: 'the master key itself instead of a file (for a secrets manager that hands out environment variables): 32 bytes as 64 hex characters or base64, checked as the file is; setting both this and `GRANARY_MASTER_KEY_FILE` is refused. Prefer the file where you can: the environment of a process is readable by its user (`/proc/<pid>/environ`); the tools fops run (ffmpeg, heif-convert, soffice) are started without it (docs/reference/encryption.md)',
  },
  {
    kind: 'int', name: 'GRANARY_IAM_AUDIT_MAX', field: 'iamAuditMax', group: 'Keys', min: 100, max: 10_000_000, default: 10_000, unit: 'records',
    description: 'IAM audit records kept per account (100 … 10000000): each IAM change is recorded (docs/reference/iam.md, "Audits"); past this many, the oldest are dropped',
  },

  // Storage
  {
    kind: 'text', name: 'GRANARY_DATA_DIR', field: 'dataDir', flag: 'dataDir', group: 'Storage', type: 'path (made absolute)', default: './data',
    description: 'SQLite metadata (`meta.db`), blobs (`blobs/`), staging (`tmp/`), `credentials.json`; in cluster mode (`GRANARY_METADATA` + `GRANARY_BLOBS=s3://`) only this node\'s caches and temp files. One `granary serve` per data dir: it holds `granary.lock` while it runs (released by the kernel when it ends), and a second server on the same dir exits 1 naming the pid holding it; the CLI\'s offline commands share the dir',
  },
  {
    kind: 'custom', name: 'GRANARY_METADATA', field: 'metadata', flag: 'metadata', group: 'Storage', type: 'URL `postgres://…`', parser: '`metadataVar` (src/config.ts)',
    defaultText: 'the data dir',
    description: 'where metadata lives: unset = SQLite `<data dir>/meta.db`; `postgres://user:pass@host:port/db` (or `postgresql://`, any libpq URL parameter such as `?sslmode=require`) = a PostgreSQL database shared by every node, migrated at start; anything else fails the start',
  },
  {
    kind: 'custom', name: 'GRANARY_BLOBS', field: 'blobs', group: 'Storage', type: 'URL `s3://…`', parser: '`blobsVar` (src/config.ts)',
    defaultText: 'the data dir',
    description: 'where object bytes live: unset = `<data dir>/blobs/`; `s3://<bucket>[/<prefix>]?endpoint=http://host:port&region=…&forcePathStyle=true` = an S3-compatible bucket; `region` defaults to `us-east-1`, `forcePathStyle` to true when an `endpoint` is given',
  },
  {
    kind: 'int', name: 'GRANARY_INLINE_MAX', field: 'inlineMaxBytes', group: 'Storage', min: 0, max: MiB, default: 64 * KiB, unit: 'bytes',
    description: 'objects up to this many bytes are stored inline in the metadata database with their entry instead of as a file (`0` = never; at most 1 MiB)',
  },
  {
    kind: 'int', name: 'GRANARY_READ_CACHE_SIZE', field: 'readCacheBytes', group: 'Storage', min: 0, max: MAX, default: 32 * MiB, unit: 'bytes',
    description: 'bytes of download reads (bucket, entry, inline bytes) each process keeps in memory while the SQLite database is unchanged (`0` = none; not used with PostgreSQL metadata)',
  },
  {
    kind: 'int', name: 'GRANARY_SQLITE_CACHE_SIZE', field: 'sqliteCacheBytes', group: 'Storage', min: 64 * KiB, max: MAX, default: 4 * MiB, unit: 'bytes',
    description: 'SQLite\'s page cache of each connection to the metadata database (`PRAGMA cache_size`; each server process holds one, plus one in its checkpoint thread): a bound that does not grow with the number of objects; pages beyond it are read again from the file, mostly from the kernel\'s page cache (not used with PostgreSQL metadata)',
  },
  {
    kind: 'custom', name: 'GRANARY_MIN_FREE_BYTES', field: 'minFree', group: 'Storage', type: 'bytes or percentage', parser: '`reserveVar` (src/config.ts)',
    defaultText: 'the smaller of 1 GiB and 5%', unit: 'bytes or %',
    description: 'free space kept on the data dir\'s file system: below it uploads are refused at once (599) and `/health/ready` answers 503; bytes (`1073741824`) or a percentage (`5%`); `0` turns it off',
  },

  // Blobs in an S3 bucket
  {
    kind: 'text', name: 'AWS_ACCESS_KEY_ID', field: 'blobs.credentials', group: 'Blobs in an S3 bucket', defaultText: 'the AWS SDK\'s default chain',
    description: 'access key id of the S3 bucket of `GRANARY_BLOBS` (set both `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` or neither)',
  },
  {
    kind: 'text', name: 'AWS_SECRET_ACCESS_KEY', field: 'blobs.credentials', group: 'Blobs in an S3 bucket', defaultText: 'the AWS SDK\'s default chain',
    description: 'secret access key of the S3 bucket of `GRANARY_BLOBS` (set both or neither)',
  },
  {
    kind: 'text', name: 'AWS_SESSION_TOKEN', field: 'blobs.credentials', group: 'Blobs in an S3 bucket', defaultText: 'the AWS SDK\'s default chain',
    description: 'session token sent with `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (temporary credentials); read only when those two are set',
  },
  {
    kind: 'int', name: 'GRANARY_S3_PART_SIZE', field: 'blobs.partBytes', group: 'Blobs in an S3 bucket', min: 5 * MiB, max: 5 * GiB, default: 8 * MiB, unit: 'bytes',
    description: 'with S3 blobs: a blob up to this size is one PutObject, a larger one a multipart upload in parts of this size (5 MiB … 5 GiB); memory per upload stays under twice this',
  },
  {
    kind: 'int', name: 'GRANARY_S3_CACHE_SIZE', field: 'blobs.cacheBytes', group: 'Blobs in an S3 bucket', min: 0, max: MAX, default: GiB, unit: 'bytes',
    description: 'with S3 blobs: bytes of local copies kept in `<data dir>/blob-cache/` for ffmpeg/ffprobe/heif-convert, least recently used out (copies in use are kept even above it)',
  },
  {
    kind: 'int', name: 'GRANARY_S3_STALE_UPLOAD_HOURS', field: 'blobs.staleUploadHours', group: 'Blobs in an S3 bucket', min: 0, max: 24 * 365, default: 24, unit: 'hours',
    description: 'with S3 blobs: multipart uploads under the prefix older than this are aborted at start (left by a crash)',
  },
  {
    kind: 'int', name: 'GRANARY_S3_TIMEOUT', field: 'blobs.timeoutSeconds', group: 'Blobs in an S3 bucket', min: 1, max: 3600, default: 30, unit: 'seconds',
    description: 'with S3 blobs: seconds an S3 call may go without an answer — the whole of a call without a body (and a GetObject until its headers), each silence of an upload or download body (a body that flows is never cut); past it the request answers 599 `the object store (S3) failed or did not answer`',
  },
  {
    kind: 'int', name: 'GRANARY_S3_CONNECT_TIMEOUT', field: 'blobs.connectTimeoutSeconds', group: 'Blobs in an S3 bucket', min: 1, max: 600, default: 5, unit: 'seconds',
    description: 'with S3 blobs: seconds to get a connection to the store (a free one of the pool, or a new TCP connection; reads and writes have pools of their own)',
  },

  // Metadata on PostgreSQL
  {
    kind: 'int', name: 'GRANARY_PG_POOL', field: 'pgPool', group: 'Metadata on PostgreSQL', min: 1, max: 1000, default: 16, unit: 'connections',
    description: 'with PostgreSQL metadata: connections of each process\'s pool (with `GRANARY_WORKERS` processes on N nodes the database sees up to N × processes × this, plus one listening connection per process)',
  },
  {
    kind: 'int', name: 'GRANARY_PG_TIMEOUT', field: 'pgTimeoutSeconds', group: 'Metadata on PostgreSQL', min: 1, max: 3600, default: 30, unit: 'seconds',
    description: 'with PostgreSQL metadata: a statement (lock waits included) or a session idle inside a transaction is cancelled by the server after this; connecting gives up after min(10, this) seconds, and a statement that gets no answer at all (a frozen server) is abandoned 2 s after it. The request then answers 599',
  },

  // Requests and uploads
  {
    kind: 'int', name: 'GRANARY_MAX_OBJECT_SIZE', field: 'maxObjectBytes', group: 'Requests and uploads', min: 1, max: MAX, default: 5 * GiB, unit: 'bytes',
    description: 'largest object one upload may carry (413 above)',
  },
  {
    kind: 'int', name: 'GRANARY_MAX_BODY_SIZE', field: 'maxBodyBytes', group: 'Requests and uploads', min: KiB, max: GiB, default: 16 * MiB, unit: 'bytes',
    description: 'largest buffered request body (management forms, JSON), and the fields of a form upload together',
  },
  {
    kind: 'int', name: 'GRANARY_CALLBACK_TIMEOUT', field: 'callbackTimeoutSeconds', group: 'Requests and uploads', min: 1, max: 600, default: 10, unit: 'seconds',
    description: 'seconds allowed for each upload-callback request',
  },
  {
    kind: 'int', name: 'GRANARY_LINGER_TIMEOUT', field: 'lingerTimeoutSeconds', group: 'Requests and uploads', min: 0, max: 3600, default: 30, unit: 'seconds',
    description: 'seconds a connection answered before its request body ended (a refused upload, a malformed request head: `Connection: close`) goes on reading and dropping that body, so a client still sending reads the JSON error instead of a TCP reset; it closes earlier when the body ends or the client closes (`0` = close at once)',
  },
  {
    kind: 'int', name: 'GRANARY_DATE_WINDOW', field: 'dateWindowSeconds', group: 'Requests and uploads', min: 1, max: 86400 * 365, default: 900, unit: 'seconds',
    description: 'allowed skew of a signed `X-Qiniu-Date` (403 outside)',
  },

  // Outbound requests and fetch
  {
    kind: 'text', name: 'GRANARY_OUTBOUND_ALLOW', field: 'outboundAllow', flag: 'outboundAllow', group: 'Outbound requests and fetch', default: '', type: 'list of CIDRs and host names',
    description: 'CIDRs and host names outbound requests (callbacks, fetch, mirror, notifications) may reach despite the outbound guard',
  },
  {
    kind: 'int', name: 'GRANARY_FETCH_TIMEOUT', field: 'fetchTimeoutSeconds', group: 'Outbound requests and fetch', min: 1, max: 3600, default: 30, unit: 'seconds',
    description: 'seconds a fetch waits for the origin\'s headers, and for each pause in its body (504 past it)',
  },
  {
    kind: 'int', name: 'GRANARY_FETCH_MAX_SIZE', field: 'fetchMaxBytes', group: 'Outbound requests and fetch', min: 1, max: MAX, default: GiB, unit: 'bytes',
    description: 'largest body a fetch or mirror pull stores (413 above)',
  },
  {
    kind: 'int', name: 'GRANARY_FETCH_CONCURRENCY', field: 'fetchConcurrency', group: 'Outbound requests and fetch', min: 1, max: 256, default: 2, unit: 'tasks',
    description: 'async-fetch tasks (`/sisyphus/fetch`) running at the same time',
  },
  {
    kind: 'int', name: 'GRANARY_FETCH_RETRY_MS', field: 'fetchRetryMs', group: 'Outbound requests and fetch', min: 1, max: 3_600_000, default: 1000, unit: 'milliseconds',
    description: 'back-off after the first failed attempt of an async-fetch task, doubled after each further one (3 attempts in all)',
  },

  // Image processing
  {
    kind: 'int', name: 'GRANARY_FOP_MAX_SOURCE', field: 'fopMaxSourceBytes', group: 'Image processing', min: 1, max: GiB, default: 20 * MiB, unit: 'bytes',
    description: 'largest source image a fop on a download URL processes (400 above)',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_MAX_SIDE', field: 'fopMaxSide', group: 'Image processing', min: 1, max: 1_000_000, default: 30000, unit: 'pixels',
    description: 'largest source image side (refused from the header, before decoding)',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_MAX_PIXELS', field: 'fopMaxPixels', group: 'Image processing', min: 1, max: MAX, default: 150_000_000, unit: 'pixels',
    description: 'largest source image area (refused before decoding); for an animated GIF/WebP, width × frame height × frames',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_MAX_FRAMES', field: 'fopMaxFrames', group: 'Image processing', min: 1, max: 100_000, default: 1000, unit: 'frames',
    description: 'most frames of an animated GIF/WebP source (refused from the header, before decoding)',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_MAX_RESOURCE', field: 'fopMaxResourceBytes', group: 'Image processing', min: 1, max: GiB, default: 10 * MiB, unit: 'bytes',
    description: 'largest image a fop fetches by URL (`watermark/1/image/…`) (400 above)',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_TIMEOUT', field: 'fopTimeoutSeconds', group: 'Image processing', min: 1, max: 3600, default: 30, unit: 'seconds',
    description: 'seconds a fop pipeline on a download URL may run (400 `timed out` above; subprocesses are killed)',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_CONCURRENCY', field: 'fopConcurrency', group: 'Image processing', min: 1, max: 256, default: 'cores', unit: 'operations',
    description: 'image operations (libvips) running at once; more wait in a queue',
  },
  {
    kind: 'int', name: 'GRANARY_FOP_CACHE_SIZE', field: 'fopCacheBytes', group: 'Image processing', min: 0, max: MAX, default: GiB, unit: 'bytes',
    description: 'bytes of derived fop results (thumbnails…) kept in `<data dir>/fop-cache/`, least recently used evicted first; `0` disables the cache',
  },
  {
    kind: 'text', name: 'GRANARY_HEIF_CONVERT', field: 'heifConvertPath', group: 'Image processing', type: 'path', defaultText: '`heif-convert` on `PATH`',
    description: 'path of libheif\'s `heif-convert` (Debian `libheif-examples`), which decodes HEIC for image fops (415 without it)',
  },

  // Audio and video
  {
    kind: 'int', name: 'GRANARY_VIDEO_CONCURRENCY', field: 'videoConcurrency', group: 'Audio and video', min: 1, max: 64, default: 1, unit: 'subprocesses',
    description: 'ffmpeg/ffprobe/heif-convert runs at once (download URLs and jobs together)',
  },
  {
    kind: 'int', name: 'GRANARY_VIDEO_MAX_SOURCE', field: 'videoMaxSourceBytes', group: 'Audio and video', min: 1, max: MAX, default: 2 * GiB, unit: 'bytes',
    description: 'largest object `avinfo`, `vframe` and `avthumb` process (400 above)',
  },
  {
    kind: 'int', name: 'GRANARY_VIDEO_THREADS', field: 'videoThreads', group: 'Audio and video', min: 1, max: 64, default: 2, unit: 'threads',
    description: '`-threads` of each ffmpeg subprocess; CPU use of video work ≈ `GRANARY_VIDEO_CONCURRENCY` × this',
  },
  {
    kind: 'text', name: 'GRANARY_FFMPEG', field: 'ffmpegPath', group: 'Audio and video', type: 'path', defaultText: 'found on `PATH`',
    description: 'path of `ffmpeg`; absent → video commands answer 415 naming the setting, everything else works',
  },
  {
    kind: 'text', name: 'GRANARY_FFPROBE', field: 'ffprobePath', group: 'Audio and video', type: 'path', defaultText: 'found on `PATH`',
    description: 'path of `ffprobe`; absent → video commands answer 415 naming the setting, everything else works',
  },

  // Files and documents
  {
    kind: 'int', name: 'GRANARY_MKZIP_MAX_FILES', field: 'mkzipMaxFiles', group: 'Files and documents', min: 1, max: 100_000, default: 3000, unit: 'files',
    description: 'most URLs one `mkzip` archives (the command\'s URLs in mode 2, the index file\'s lines in mode 4; over → 400)',
  },
  {
    kind: 'int', name: 'GRANARY_MKZIP_MAX_BYTES', field: 'mkzipMaxBytes', group: 'Files and documents', min: 1, max: MAX, default: 10 * GiB, unit: 'bytes',
    description: 'largest total of source bytes one `mkzip` reads (over → the command fails, nothing is stored); the archive itself is bounded by GRANARY_MAX_OBJECT_SIZE',
  },
  {
    kind: 'int', name: 'GRANARY_DOC_MAX_SOURCE', field: 'docMaxSourceBytes', group: 'Files and documents', min: 1, max: MAX, default: 100 * MiB, unit: 'bytes',
    description: 'largest document `yifangyun_preview` converts (400 above)',
  },
  {
    kind: 'int', name: 'GRANARY_MD2HTML_MAX_SOURCE', field: 'md2htmlMaxSourceBytes', group: 'Files and documents', min: 1, max: GiB, default: MiB, unit: 'bytes',
    description: 'largest Markdown object `md2html` renders (400 above); rendering runs on the event loop at about 1.6 s per MiB',
  },
  {
    kind: 'text', name: 'GRANARY_SOFFICE', field: 'sofficePath', group: 'Files and documents', type: 'path', defaultText: '`soffice` on `PATH`',
    description: 'path of LibreOffice\'s `soffice` (Debian `libreoffice-core-nogui` with `-writer-`, `-calc-`, `-impress-nogui`) for document conversion; absent → `yifangyun_preview` answers 415 naming this setting',
  },

  // Persistent jobs and notifications
  {
    kind: 'int', name: 'GRANARY_JOB_TIMEOUT', field: 'jobTimeoutSeconds', group: 'Persistent jobs and notifications', min: 1, max: 86400, default: 600, unit: 'seconds',
    description: 'seconds one command of a persistent job (pfop, persistentOps) may run, not counting time spent waiting for a video/image slot (over → the item fails, code 3)',
  },
  {
    kind: 'int', name: 'GRANARY_JOB_CONCURRENCY', field: 'jobConcurrency', group: 'Persistent jobs and notifications', min: 0, max: 64, default: 2, unit: 'jobs',
    description: 'concurrency of the `0.default` pipeline when first created, and of pipelines created without one',
  },
  {
    kind: 'int', name: 'GRANARY_JOB_ATTEMPTS', field: 'jobAttempts', group: 'Persistent jobs and notifications', min: 1, max: 100, default: 3, unit: 'attempts',
    description: 'times a job may be started; a job interrupted by crashes more often fails its unfinished commands',
  },
  {
    kind: 'int', name: 'GRANARY_NOTIFY_ATTEMPTS', field: 'notifyAttempts', group: 'Persistent jobs and notifications', min: 1, max: 20, default: 3, unit: 'attempts',
    description: 'attempts to POST a finished job to its notify URL before its code becomes 4',
  },
  {
    kind: 'int', name: 'GRANARY_NOTIFY_RETRY_MS', field: 'notifyRetryMs', group: 'Persistent jobs and notifications', min: 1, max: 3_600_000, default: 1000, unit: 'milliseconds',
    description: 'pause before the second notify attempt, doubled for each further one',
  },

  // Bucket event notifications
  {
    kind: 'int', name: 'GRANARY_EVENT_ATTEMPTS', field: 'eventAttempts', group: 'Bucket event notifications', min: 1, max: 100, default: 10, unit: 'attempts',
    description: 'attempts to deliver a bucket event notification before it is given up (`failed`)',
  },
  {
    kind: 'int', name: 'GRANARY_EVENT_RETRY_MS', field: 'eventRetryMs', group: 'Bucket event notifications', min: 1, max: 3_600_000, default: 1000, unit: 'milliseconds',
    description: 'pause after the first failed event delivery, doubled after each further one, at most an hour',
  },
  {
    kind: 'int', name: 'GRANARY_EVENT_CONCURRENCY', field: 'eventConcurrency', group: 'Bucket event notifications', min: 1, max: 64, default: 4, unit: 'deliveries',
    description: 'event notifications delivered at the same time',
  },

  // Bucket replication
  {
    kind: 'int', name: 'GRANARY_REPLICATION_CONCURRENCY', field: 'replicationConcurrency', group: 'Bucket replication', min: 1, max: 64, default: 4, unit: 'copies',
    description: 'objects each process copies to replication destinations at the same time (docs/guides/replication.md)',
  },
  {
    kind: 'int', name: 'GRANARY_REPLICATION_RETRY_MS', field: 'replicationRetryMs', group: 'Bucket replication', min: 1, max: 3_600_000, default: 1000, unit: 'milliseconds',
    description: 'pause after the first failed replication of an object, doubled after each further one up to `GRANARY_REPLICATION_MAX_RETRY_MS`; an object is retried until it is in step',
  },
  {
    kind: 'int', name: 'GRANARY_REPLICATION_MAX_RETRY_MS', field: 'replicationMaxRetryMs', group: 'Bucket replication', min: 1, max: 86_400_000, default: 300_000, unit: 'milliseconds',
    description: 'longest pause between two replication attempts of an object',
  },
  {
    kind: 'int', name: 'GRANARY_REPLICATION_FAIL_AFTER', field: 'replicationFailAfter', group: 'Bucket replication', min: 1, max: 1000, default: 3, unit: 'attempts',
    description: 'failed attempts after which an object\'s replication status is FAILED (it is still retried with back-off)',
  },
  {
    kind: 'int', name: 'GRANARY_REPLICATION_BACKLOG', field: 'replicationBacklog', group: 'Bucket replication', min: 1, max: 1_000_000_000, default: 1_000_000, unit: 'objects',
    description: 'objects waiting for replication above which a warning is logged (once a minute at most) and `granary_replication_backlog_exceeded` is 1; the outbox is on disk, never in memory, and one row per key however often it changes',
  },
  {
    kind: 'int', name: 'GRANARY_REPLICATION_MULTIPART_BYTES', field: 'replicationMultipartBytes', group: 'Bucket replication', min: 5_242_880, max: 5_368_709_120, default: 67_108_864, unit: 'bytes',
    description: 'objects larger than this go to the destination by multipart upload (8 MiB parts), smaller ones by one PutObject',
  },

  // Background work
  {
    kind: 'int', name: 'GRANARY_EXPIRY_INTERVAL', field: 'expirySweepSeconds', group: 'Background work', min: 1, max: 86400, default: 60, unit: 'seconds',
    description: 'seconds between sweeps that delete objects past their `deleteAfterDays` or a bucket lifecycle rule\'s `delete_after_days`',
  },
  {
    kind: 'int', name: 'GRANARY_SCRUB_BYTES_PER_SEC', field: 'scrubBytesPerSecond', group: 'Background work', min: 0, max: MAX, default: 16 * MiB, unit: 'bytes per second',
    description: 'read rate of the background scrubber, which checks every stored blob against its checksums; `0` turns it off (`granary scrub` still works)',
  },
  {
    kind: 'int', name: 'GRANARY_SCRUB_INTERVAL_DAYS', field: 'scrubIntervalDays', group: 'Background work', min: 1, max: 3650, default: 30, unit: 'days',
    description: 'days from the start of one full scrub pass to the start of the next',
  },

  // Workers and processes
  {
    kind: 'int', name: 'GRANARY_WORKERS', field: 'workers', flag: 'workers', group: 'Workers and processes', min: 1, max: 256, default: 'cores', unit: 'processes',
    description: 'worker processes `granary serve` runs, sharing the port and the data dir; `1` = one process, no primary. `/metrics` on any worker reads the totals of all of them',
  },
  {
    kind: 'int', name: 'GRANARY_WORKER_OLD_SPACE_MB', field: 'workerOldSpaceMb', group: 'Workers and processes', min: 0, max: 1024 * 1024, default: 256, unit: 'MiB',
    description: 'V8\'s initial old-space size of each worker process (`node --initial-old-space-size`; `0` = V8\'s own; a flag the operator gives node wins). V8 sizes its old-space limit from it, so the buffers that large transfers promote trigger far fewer full collections. A single process (`GRANARY_WORKERS=1`) cannot give itself the flag: start it as `node --initial-old-space-size=256 bin/granary.js serve` (without it, it logs a warning at start)',
  },
  {
    kind: 'int', name: 'GRANARY_WORKER_SEMI_SPACE_MB', field: 'workerSemiSpaceMb', group: 'Workers and processes', min: 0, max: 1024, default: 8, unit: 'MiB',
    description: 'V8\'s largest semi-space of each worker process (`node --max-semi-space-size`; `0` = V8\'s own, 16; a flag the operator gives node wins). The young generation commits up to twice it, and V8 grows it to the maximum under load; a single process (`GRANARY_WORKERS=1`) takes the flag on its own command line',
  },
  {
    kind: 'int', name: 'GRANARY_IDLE_GC_SECONDS', field: 'idleGcSeconds', group: 'Workers and processes', min: 0, max: 3600, default: 10, unit: 'seconds',
    description: 'a process (primary, worker or single) whose event loop was idle for this long, and whose heap and buffers grew by 4 MiB since its last collection, runs one full garbage collection, giving back what a burst of requests or the start-up left (the young generation shrinks too); `0` = never',
  },
  {
    kind: 'int', name: 'GRANARY_LEASE_SECONDS', field: 'leaseSeconds', group: 'Workers and processes', min: 1, max: 3600, default: 15, unit: 'seconds',
    description: 'lifetime of the leases coordinating the processes (each process\'s liveness, the run-once work), renewed every third of it; a process that stops renewing is presumed dead after it',
  },
  {
    kind: 'int', name: 'GRANARY_STOP_TIMEOUT', field: 'stopTimeoutSeconds', group: 'Workers and processes', min: 1, max: 3600, default: 30, unit: 'seconds',
    description: 'seconds a graceful stop (SIGTERM/SIGINT) waits for requests, jobs and fetch tasks in flight; past it the requests still running are aborted and logged, and the stop goes on',
  },

  // Console, metrics and logs
  {
    kind: 'int', name: 'GRANARY_CONSOLE_SESSION_MINUTES', field: 'consoleSessionMinutes', group: 'Console, metrics and logs', min: 1, max: 7 * 24 * 60, default: 60, unit: 'minutes',
    description: 'a web console session ends after this many minutes without a request (1 … 10080); sessions live in the metadata (any worker or node answers them; a restart keeps them)',
  },
  {
    kind: 'int', name: 'GRANARY_CONSOLE_SAMPLE_SECONDS', field: 'consoleSampleSeconds', group: 'Console, metrics and logs', min: 1, max: 3600, default: 60, unit: 'seconds',
    description: 'how often each node records its traffic (requests, errors, bytes, latency) for the console Overview\'s graphs, kept in the metadata for 60 such intervals (an hour by default); storage per bucket is recorded every 60 intervals (hourly) and kept 30 days',
  },
  {
    kind: 'text', name: 'GRANARY_METRICS_TOKEN', field: 'metricsToken', group: 'Console, metrics and logs', defaultText: 'unset',
    description: 'when set, `GET /metrics` requires `Authorization: Bearer <token>` (else 401)',
  },
  {
    kind: 'text', name: 'GRANARY_LOG_LEVEL', field: 'logLevel', flag: 'logLevel', group: 'Console, metrics and logs', default: 'info', type: 'pino level',
    description: 'pino log level (`silent` … `trace`); every request line carries `reqId` = `X-Reqid`',
  },
  {
    kind: 'custom', name: 'GRANARY_LOG_FORMAT', field: 'logFormat', flag: 'logFormat', group: 'Console, metrics and logs', type: '`json`, `pretty` or `auto`',
    parser: '`logFormatVar` (src/config.ts)', defaultText: '`auto`',
    description: '`json` (one JSON object per line), `pretty` (pino-pretty: time, level, message, fields), `auto` = `pretty` when stdout is a terminal, else `json`',
  },

  // Transfer client
  {
    kind: 'custom', name: 'GRANARY_CONFIG_DIR', group: 'Transfer client', type: 'path', parser: '`configDir` (src/transfer/remotes.ts)',
    defaultText: '`~/.config/granary`',
    description: 'the transfer client\'s directory (`remotes.json`, resume records, migrate checkpoints); not used by `serve`',
  },
];

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]));

/** The table's entry of `name`; throws when the table has none (a setting read without being declared). */
export function setting(name: string): Setting {
  const s = BY_NAME.get(name);
  if (s === undefined) throw new Error(`${name} is not declared in src/settings-table.ts`);
  return s;
}

/** The integer entry of `name`; throws when it is not one. */
export function intSetting(name: string): IntSetting {
  const s = setting(name);
  if (s.kind !== 'int') throw new Error(`${name} is not an integer setting in src/settings-table.ts`);
  return s;
}

/** The string entry of `name`; throws when it is not one. */
export function textSetting(name: string): TextSetting {
  const s = setting(name);
  if (s.kind !== 'text') throw new Error(`${name} is not a string setting in src/settings-table.ts`);
  return s;
}

const BINARY_UNITS: [number, string][] = [
  [GiB, 'GiB'],
  [MiB, 'MiB'],
  [KiB, 'KiB'],
];

/** An integer as the docs show it: `65536` (64 KiB) for whole binary multiples of bytes. */
function intText(n: number, unit: string | undefined): string {
  if (unit?.startsWith('bytes')) {
    const per = unit === 'bytes per second' ? '/s' : '';
    for (const [size, name] of BINARY_UNITS) if (n >= size && n % size === 0) return `\`${n}\` (${n / size} ${name}${per})`;
  }
  return `\`${n}\``;
}

/** The default as the configuration page shows it (Markdown). */
export function defaultText(s: Setting): string {
  switch (s.kind) {
    case 'int':
      return s.default === 'cores' ? 'the number of cores (`os.availableParallelism()`)' : intText(s.default, s.unit);
    case 'text':
      if (s.default !== undefined) return s.default === '' ? 'empty' : `\`${s.default}\``;
      return s.defaultText ?? 'unset';
    case 'custom':
      return s.defaultText;
  }
}

/** The type (and how it is parsed) as the configuration page shows it (Markdown). */
export function typeText(s: Setting): string {
  switch (s.kind) {
    case 'int':
      return `integer ${s.min}–${s.max === MAX ? '2^53−1' : s.max}`;
    case 'text':
      return s.type ?? 'string';
    case 'custom':
      return `${s.type}; parsed by ${s.parser}`;
  }
}
