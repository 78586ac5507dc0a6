/**
 * The shape of the configuration `loadConfig` (config.ts) builds; the settings table (settings-table.ts) names its
 * fields. Types only, so the table and the loader both import them and not each other.
 */
import type { AdvertisedHosts } from './config-hosts.js';
import type { TrustProxy } from './trust-proxy.js';

/** Blob bytes on the local disk, under the data dir (the default). */
export interface FsBlobsConfig {
  kind: 'fs';
}

/** Blob bytes in an S3 bucket (GRANARY_BLOBS=s3://…); see store/s3/s3-blob-store.ts. */
export interface S3BlobsConfig {
  kind: 's3';
  bucket: string;
  /** Key prefix of every blob: '' or ending in '/'. */
  prefix: string;
  /** `http(s)://host[:port]` of an S3-compatible server; absent for AWS S3 itself. */
  endpoint?: string;
  /** Signing region (default us-east-1). */
  region: string;
  /** Path-style addressing (default true when an endpoint is given). */
  forcePathStyle: boolean;
  /** AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN); absent: the AWS SDK's default chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** GRANARY_S3_CACHE_SIZE: bytes of local blob copies kept for ffmpeg/heif-convert (default 1 GiB). */
  cacheBytes: number;
  /** GRANARY_S3_PART_SIZE: multipart part size and threshold, bytes (default 8 MiB; 5 MiB..5 GiB). */
  partBytes: number;
  /** GRANARY_S3_STALE_UPLOAD_HOURS: multipart uploads older than this are aborted at start, hours (default 24). */
  staleUploadHours: number;
  /**
   * GRANARY_S3_TIMEOUT: seconds (default 30, 1–3600) an S3 call may go without an answer: the whole of a call
   * without a streamed body (HEAD, LIST, DELETE, create/complete/abort of a multipart upload, a GetObject until
   * its headers), and each silence of a connection carrying a body (a PutObject or UploadPart being sent, a
   * GetObject body being read while the reader wants bytes). A body still flowing is never cut. Past it the call
   * fails and the request answers 599 (store/s3/s3-clients.ts, docs/operations/object-store-timeouts.md).
   */
  timeoutSeconds: number;
  /**
   * GRANARY_S3_CONNECT_TIMEOUT: seconds (default 5, 1–600) to get a connection to the store: a free one of the
   * process's pool (reads and writes have pools of their own) or a new TCP connection.
   */
  connectTimeoutSeconds: number;
}

export type BlobsConfig = FsBlobsConfig | S3BlobsConfig;

/**
 * Where metadata lives (GRANARY_METADATA): the embedded SQLite `<dataDir>/meta.db` (the default), or a PostgreSQL
 * database shared by every node of a cluster (docs/guides/running-a-cluster.md).
 */
export type MetadataConfig = { kind: 'sqlite' } | { kind: 'postgres'; url: string };

export interface Config {
  /** GRANARY_PORT: TCP port of the Kodo API listener (every role; default 9000; 0 = any free port). */
  port: number;
  /** GRANARY_HOST: bind address (default 0.0.0.0). */
  host: string;
  /**
   * GRANARY_DATA_DIR: metadata database, blobs and key file (default ./data). With GRANARY_METADATA=postgres://
   * and GRANARY_BLOBS=s3:// it holds only this node's caches and temp files.
   */
  dataDir: string;
  /** GRANARY_ACCESS_KEY / GRANARY_SECRET_KEY: root key pair; generated and kept in the data dir when unset. */
  accessKey?: string;
  secretKey?: string;
  /** GRANARY_PUBLIC_URL: base URL advertised to clients; default `http://127.0.0.1:<port>`. No trailing slash. */
  publicUrl?: string;
  /** GRANARY_REGION: region id answered by the region query (default z0). */
  region: string;
  /**
   * GRANARY_UP_HOSTS, GRANARY_IO_HOSTS, GRANARY_RS_HOSTS, GRANARY_RSF_HOSTS, GRANARY_API_HOSTS, GRANARY_UC_HOSTS:
   * the hosts the region queries advertise per service, main first then backups (config-hosts.ts); a service
   * without a list gets the public URL's host.
   */
  advertisedHosts: AdvertisedHosts;
  /** GRANARY_MAX_OBJECT_SIZE: largest object accepted by one upload, bytes (default 5 GiB). */
  maxObjectBytes: number;
  /**
   * GRANARY_INLINE_MAX: objects up to this many bytes are stored inline in the metadata database with their entry
   * instead of as a file (default 64 KiB; 0 = never). See docs/reference/features.md.
   */
  inlineMaxBytes: number;
  /**
   * GRANARY_READ_CACHE_SIZE: bytes of download reads (bucket, entry, inline bytes) each process keeps while the
   * SQLite database is unchanged (default 32 MiB; 0 = none; store/sqlite/read-cache.ts). Not used with PostgreSQL.
   */
  readCacheBytes: number;
  /**
   * GRANARY_SQLITE_CACHE_SIZE: SQLite's page cache of each connection to the metadata database, bytes (`PRAGMA
   * cache_size`, in KiB). Pages beyond it are read again from the file (the kernel's page cache).
   */
  sqliteCacheBytes: number;
  /** GRANARY_MAX_BODY_SIZE: largest buffered management/JSON body, bytes (default 16 MiB). */
  maxBodyBytes: number;
  /** GRANARY_CALLBACK_TIMEOUT: seconds allowed for one upload-callback request (default 10). */
  callbackTimeoutSeconds: number;
  /**
   * GRANARY_LINGER_TIMEOUT: seconds a connection answered before its request body ended (a refused upload, a
   * request head the HTTP parser refused) goes on reading and dropping that body, so the client reads the answer
   * instead of a TCP reset (default 30, 0–3600; 0 closes at once). See connections.ts.
   */
  lingerTimeoutSeconds: number;
  /** GRANARY_FETCH_TIMEOUT: seconds a fetch may wait for the origin's headers, and for each pause in its body (default 30). */
  fetchTimeoutSeconds: number;
  /** GRANARY_FETCH_MAX_SIZE: largest body a fetch stores, bytes (default 1 GiB). */
  fetchMaxBytes: number;
  /** GRANARY_FETCH_CONCURRENCY: async-fetch tasks (`/sisyphus/fetch`) run at the same time (default 2). */
  fetchConcurrency: number;
  /**
   * GRANARY_FETCH_RETRY_MS: back-off after the first failed attempt of an async-fetch task, milliseconds, doubled
   * after each further one (default 1000); measured on the Clock (ports/clock.ts).
   */
  fetchRetryMs: number;
  /** GRANARY_FOP_MAX_SOURCE: largest object an image fop reads, bytes (default 20 MiB; larger → 400). */
  fopMaxSourceBytes: number;
  /** GRANARY_FOP_MAX_SIDE: largest width or height of a fop's source image, pixels (default 30000). */
  fopMaxSide: number;
  /** GRANARY_FOP_MAX_PIXELS: largest width × height of a fop's source image (default 150,000,000). */
  fopMaxPixels: number;
  /**
   * GRANARY_FOP_MAX_FRAMES: most frames of an animated GIF or WebP source an image fop accepts (default 1000; more
   * → 400 from the header, before decoding). All frames together also count against GRANARY_FOP_MAX_PIXELS.
   */
  fopMaxFrames: number;
  /** GRANARY_FOP_MAX_RESOURCE: largest resource a fop fetches by URL (watermark images), bytes (default 10 MiB; larger → 413). */
  fopMaxResourceBytes: number;
  /** GRANARY_FOP_TIMEOUT: seconds one fop pipeline on a download URL may run (default 30; over → 400). */
  fopTimeoutSeconds: number;
  /** GRANARY_FOP_CONCURRENCY: image operations (libvips) running at once (default: the number of cores). */
  fopConcurrency: number;
  /**
   * GRANARY_FOP_CACHE_SIZE: bytes of derived fop results (thumbnails…) kept under `<dataDir>/fop-cache/` and
   * served without recomputing, least recently used evicted first (default 1 GiB; 0 disables the cache).
   */
  fopCacheBytes: number;
  /** GRANARY_VIDEO_CONCURRENCY: ffmpeg/ffprobe/heif-convert subprocesses running at once (default 1). */
  videoConcurrency: number;
  /** GRANARY_VIDEO_MAX_SOURCE: largest object an audio/video fop (avinfo, vframe, avthumb) reads, bytes (default 2 GiB; larger → 400). */
  videoMaxSourceBytes: number;
  /** GRANARY_VIDEO_THREADS: `-threads` of each ffmpeg subprocess (decoding and encoding; default 2), so CPU use is about GRANARY_VIDEO_CONCURRENCY × this. */
  videoThreads: number;
  /** GRANARY_FFMPEG / GRANARY_FFPROBE / GRANARY_HEIF_CONVERT: program paths (default: found on PATH; absent → those commands fail with 415). */
  ffmpegPath?: string;
  ffprobePath?: string;
  heifConvertPath?: string;
  /** GRANARY_SOFFICE: LibreOffice's `soffice` for document conversion (default: found on PATH; absent → 415). */
  sofficePath?: string;
  /** GRANARY_MKZIP_MAX_FILES: most URLs one mkzip archives (mode 2 and mode 4; default 3000). */
  mkzipMaxFiles: number;
  /** GRANARY_MKZIP_MAX_BYTES: largest total of source bytes one mkzip reads (default 10 GiB; over → the command fails). */
  mkzipMaxBytes: number;
  /** GRANARY_DOC_MAX_SOURCE: largest document the conversion command reads, bytes (default 100 MiB; over → 400). */
  docMaxSourceBytes: number;
  /** GRANARY_MD2HTML_MAX_SOURCE: largest Markdown object md2html renders, bytes (default 1 MiB; over → 400). */
  md2htmlMaxSourceBytes: number;
  /** GRANARY_JOB_TIMEOUT: seconds one command of a persistent job (pfop, persistentOps) may run, waiting for a fop pool slot not counted (default 600; over → item code 3). */
  jobTimeoutSeconds: number;
  /** GRANARY_JOB_CONCURRENCY: concurrency of the `0.default` pipeline when first created, and of pipelines created without one (default 2). */
  jobConcurrency: number;
  /** GRANARY_JOB_ATTEMPTS: runs a job may start before a job interrupted that often (crash) is failed (default 3). */
  jobAttempts: number;
  /** GRANARY_NOTIFY_ATTEMPTS: attempts to POST a finished job to its notify URL before its code becomes 4 (default 3). */
  notifyAttempts: number;
  /** GRANARY_NOTIFY_RETRY_MS: pause before the second notify attempt, milliseconds, doubled for each further one (default 1000). */
  notifyRetryMs: number;
  /** GRANARY_OUTBOUND_ALLOW: CIDRs and host names outbound requests (callbacks) may reach despite the guard. */
  outboundAllow: string;
  /** GRANARY_EVENT_ATTEMPTS: delivery attempts of a bucket event notification before it is given up (default 10). */
  eventAttempts: number;
  /** GRANARY_EVENT_RETRY_MS: pause after the first failed event delivery, milliseconds, doubled after each further one, at most an hour (default 1000). */
  eventRetryMs: number;
  /** GRANARY_EVENT_CONCURRENCY: event notifications delivered at the same time (default 4). */
  eventConcurrency: number;
  /** Replication copies at once per process (replication/worker.ts). */
  replicationConcurrency: number;
  /** First retry pause of a failed replication, ms (doubled each time). */
  replicationRetryMs: number;
  /** Longest retry pause of a replication, ms. */
  replicationMaxRetryMs: number;
  /** Failed attempts after which an object's replication status is FAILED. */
  replicationFailAfter: number;
  /** Waiting replication rows above which a warning is logged. */
  replicationBacklog: number;
  /** Objects above this size (bytes) are replicated by multipart upload. */
  replicationMultipartBytes: number;
  /** GRANARY_DATE_WINDOW: allowed skew of a signed X-Qiniu-Date, seconds (default 900). */
  dateWindowSeconds: number;
  /** GRANARY_IAM_AUDIT_MAX: IAM audit records kept per account, the oldest dropped past it (default 10000). */
  iamAuditMax: number;
  /** GRANARY_EXPIRY_INTERVAL: seconds between sweeps deleting expired objects (default 60). */
  expirySweepSeconds: number;
  /**
   * GRANARY_MIN_FREE_BYTES: uploads are refused (599) while the data dir's file system has less free space than
   * this: bytes (`1073741824`), a percentage of the file system (`5%`), or by default the smaller of 1 GiB and 5%.
   */
  minFree: { bytes?: number; percent?: number };
  /** GRANARY_SCRUB_BYTES_PER_SEC: read rate of the background scrubber, bytes per second (default 16 MiB; 0 turns it off). */
  scrubBytesPerSecond: number;
  /** GRANARY_SCRUB_INTERVAL_DAYS: days from the start of one full scrub pass to the start of the next (default 30). */
  scrubIntervalDays: number;
  /** GRANARY_CONSOLE_SESSION_MINUTES: a web console session ends after this many minutes without a request (default 60). */
  consoleSessionMinutes: number;
  /** GRANARY_CONSOLE_SAMPLE_SECONDS: interval of the console Overview's traffic samples, seconds (default 60; console/history.ts). */
  consoleSampleSeconds: number;
  /**
   * GRANARY_WORKERS: worker processes `granary serve` runs, sharing the port and the data dir (default: the number
   * of cores; 1 = one process, no primary). docs/operations/workers.md.
   */
  workers: number;
  /**
   * GRANARY_WORKER_OLD_SPACE_MB: V8's initial old-space size of each worker process, MiB (`--initial-old-space-size`;
   * default 256; 0 = V8's own). V8 sizes its old-space limit from it. Streamed bodies hold buffers long enough to
   * be promoted; with V8's small default a process serving 16 large downloads ran a full collection every ~50 ms
   * (a quarter of its event loop). Only worker processes: a single process (GRANARY_WORKERS=1) needs node's flag
   * on its command line (cli/serve.ts warns when it is missing).
   */
  workerOldSpaceMb: number;
  /**
   * GRANARY_WORKER_SEMI_SPACE_MB: V8's largest semi-space of each worker process, MiB (`node --max-semi-space-size`;
   * 0 = V8's own, 16). The young generation commits up to twice it; V8 grows it to the maximum under load and keeps
   * it until a collection finds the process idle (idle-gc.ts). Only worker processes, like workerOldSpaceMb.
   */
  workerSemiSpaceMb: number;
  /**
   * GRANARY_IDLE_GC_SECONDS: a process whose event loop was idle for this long and whose memory grew since its last
   * collection runs a full garbage collection (idle-gc.ts), seconds; 0 = never.
   */
  idleGcSeconds: number;
  /**
   * GRANARY_LEASE_SECONDS: lifetime of the leases coordinating the processes (a process's liveness, the singletons),
   * seconds, renewed every third of it (default 15). A worker that dies on this host is noticed at the next look
   * (ttl/3); a process that stops renewing is presumed dead after this.
   */
  leaseSeconds: number;
  /**
   * GRANARY_STOP_TIMEOUT: seconds (default 30, 1–3600) a graceful stop waits for requests in flight, jobs and
   * fetch tasks; past it the requests still running are aborted (their store calls fail, their connections close,
   * each is logged) and the stop goes on (main.ts; docs/operations/object-store-timeouts.md).
   */
  stopTimeoutSeconds: number;
  /** GRANARY_LOG_LEVEL: pino level (default info). */
  logLevel: string;
  /**
   * GRANARY_BLOBS: where blob bytes live. Unset: the data dir. `s3://<bucket>[/<prefix>]?endpoint=http://host:port
   * &region=…&forcePathStyle=true`: an S3 bucket (metadata stays in the data dir's SQLite).
   */
  blobs: BlobsConfig;
  /**
   * GRANARY_METADATA: where metadata lives. Unset: SQLite in the data dir. `postgres://user:pass@host:port/db` (or
   * `postgresql://`): a PostgreSQL database shared by every node (cluster mode; the root key pair is kept there too).
   */
  metadata: MetadataConfig;
  /** GRANARY_PG_POOL: connections of this process's PostgreSQL pool (cluster mode; default 16, 1–1000). */
  pgPool: number;
  /**
   * GRANARY_PG_TIMEOUT: seconds (default 30, 1–3600) before a PostgreSQL statement (lock waits included) or a
   * session idle inside a transaction is cancelled by the server; connecting gives up after min(10, this) seconds,
   * a statement without any answer 2 s after this. The request then answers 599 (docs/guides/running-a-cluster.md).
   */
  pgTimeoutSeconds: number;
  /**
   * GRANARY_CONSOLE_PORT: TCP port of the console listener (web console and `/metrics`; default 9001).
   * Absent when GRANARY_CONSOLE_PORT=0, which disables the listener; 0 set here in code means any free port (tests).
   */
  consolePort?: number;
  /** GRANARY_CONSOLE_HOST: bind address of the console listener (default: 127.0.0.1, loopback only, whatever GRANARY_HOST is). */
  consoleHost: string;
  /**
   * GRANARY_S3_PORT: TCP port of the S3 listener (the AWS S3 API, src/s3api/server.ts; default 9002). Absent when
   * GRANARY_S3_PORT=0, which disables the listener; 0 set here in code means any free port (tests).
   */
  s3Port?: number;
  /** GRANARY_S3_HOST: bind address of the S3 listener (default: GRANARY_HOST). */
  s3Host: string;
  /** GRANARY_S3_DOMAIN: the S3 endpoint's domain for virtual-hosted requests (`<bucket>.<domain>`); unset: path style only. */
  s3Domain?: string;
  /**
   * GRANARY_SOURCE_DOMAIN: the parent of every bucket's default source (io-src) domain, `<bucket>.<domain>`
   * (lower case, no leading or trailing dot); unset: none.
   */
  sourceDomain?: string;
  /**
   * GRANARY_CDN_DOMAINS: bound domains served through a CDN (lower case; `*.suffix` patterns): the only addresses
   * where referer rules apply without `source_enabled` (buckets/referer.ts).
   */
  cdnDomains: string[];
  /**
   * GRANARY_TRUST_PROXY: the reverse proxies in front of the console listener whose X-Forwarded-For/-Proto/-Host
   * are believed (default none: false; true = every peer; or a list of addresses/CIDR blocks). src/trust-proxy.ts.
   */
  trustProxy: TrustProxy;
  /**
   * GRANARY_MASTER_KEY_FILE: path of the master key of encryption at rest (store/crypto/master-key.ts); unset:
   * blobs are stored unencrypted.
   */
  masterKeyFile?: string;
  /**
   * GRANARY_MASTER_KEY: the master key itself (64 hex characters or base64 of 32 bytes), instead of
   * GRANARY_MASTER_KEY_FILE; both set is refused at start (store/crypto/master-key.ts `readMasterKey`).
   */
  masterKey?: string;
  /** GRANARY_METRICS_TOKEN: when set, `GET /metrics` requires `Authorization: Bearer <token>` (else 401). */
  metricsToken?: string;
  /** GRANARY_LOG_FORMAT: `pretty` (pino-pretty, one line per event), `json`, or `auto` (default: pretty when stdout is a TTY, else json). */
  logFormat: LogFormat;
}

/** GRANARY_LOG_FORMAT values. */
export type LogFormat = 'pretty' | 'json' | 'auto';
