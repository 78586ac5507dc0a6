/**
 * The Granary context: configuration and ports, built once in main.ts and handed to routes and domain code.
 */
import type { Logger } from 'pino';
import type { KeyIndex } from './auth/key-index.js';
import type { KeyPair, SecretLookup } from './auth/keys.js';
import type { DomainIndex } from './buckets/domain-index.js';
import type { Config } from './config.js';
import type { FopCache } from './fops/cache/fop-cache.js';
import type { FopPools } from './fops/pools.js';
import type { FopTools, Moderation } from './fops/types.js';
import type { JobQueue } from './ports/job-queue.js';
import type { Metrics } from './metrics/metrics.js';
import type { OutboundPolicy } from './outbound/guard.js';
import type { Clock } from './ports/clock.js';
import type { BlobStore } from './ports/blob.js';
import type { FreeSpace } from './objects/free-space.js';
import type { ScrubStatusSource } from './ports/scrub-status.js';
import type { MetaStore } from './ports/meta.js';

export interface Granary {
  config: Config;
  meta: MetaStore;
  blobs: BlobStore;
  /** Free space on the data dir's file system and the upload reserve (GRANARY_MIN_FREE_BYTES). */
  space: FreeSpace;
  clock: Clock;
  log: Logger;
  /** The root key pair. */
  keys: KeyPair;
  /** Every accepted key pair (root and accounts). */
  keyIndex: KeyIndex;
  /** `keyIndex.secretOf`. */
  secretOf: SecretLookup;
  /** The persistent-processing job queue and pipelines (normally `meta.jobs`). */
  jobs: JobQueue;
  /** Outbound guard settings for every server → third-party request: callbacks, fetch and mirror, job and event
   *  notifications, remote watermark images. */
  outbound: OutboundPolicy;
  /** Bound download domains (Host → bucket). */
  domains: DomainIndex;
  /** The bounded pools fop work runs in (image, video, model). */
  fopPools: FopPools;
  /** External programs available to fops (ffmpeg, ffprobe, heif-convert). */
  fopTools: FopTools;
  /** The moderation model of the `nrop` fop (a worker thread started on first use); absent in offline CLI contexts. */
  moderation?: Moderation;
  /** The derived-result cache of fops on download URLs (absent in offline CLI contexts = no caching). */
  fopCache?: FopCache;
  /** The background scrubber's status (objects/scrubber.ts; absent in offline CLI contexts). */
  scrubber?: ScrubStatusSource;
  /** Prometheus metrics (metrics/metrics.ts; absent in offline CLI contexts: nothing is counted). */
  metrics?: Metrics;
  /**
   * Tag of this process (workers/identity.ts) marking its per-process files (staging, fop temp dirs); absent in
   * offline CLI contexts (`offline`).
   */
  processTag?: string;
  /** Slot of this worker process (0…GRANARY_WORKERS−1) when the server runs several; absent otherwise. */
  workerSlot?: number;
  /** Base URL advertised to clients, e.g. `http://127.0.0.1:9000` (set once the port is known). */
  publicUrl: string;
}
