/**
 * Shared types of the fop commands (docs/development/kodo-protocol.md §10). A command is pure: (source, parsed params, context) →
 * an image or other bytes (in memory or in a temp file) or a JSON document. The registry parses; execute.ts
 * builds the source and the context; the route (or the job worker) only serves or stores the result.
 */
import type { Readable } from 'node:stream';
import type { Clock } from '../ports/clock.js';
import type { BucketRecord } from '../ports/meta.js';

/** Limits every command enforces (config GRANARY_FOP_*). */
export interface FopLimits {
  /** Largest source a command reads into memory, bytes (`FopSource.bytes()` → 400 beyond it). */
  maxSourceBytes: number;
  /** Largest width or height of a source image, pixels. */
  maxSide: number;
  /** Largest width × height of a source image (also sharp's `limitInputPixels`). */
  maxPixels: number;
  /**
   * Most frames of an animated (GIF, WebP) source (GRANARY_FOP_MAX_FRAMES); its frames together (width × frame
   * height × frames) must also stay within `maxPixels` (animation.ts).
   */
  maxFrames: number;
  /** Largest resource fetched by URL for a command (`fetchResource`, e.g. a watermark image), bytes. */
  maxResourceBytes: number;
  /** Seconds one libvips operation may run before it is abandoned. */
  timeoutSeconds: number;
  /** Largest source an audio/video command (ffprobe/ffmpeg) reads, bytes (GRANARY_VIDEO_MAX_SOURCE; → 400 beyond it). */
  maxVideoSourceBytes: number;
  /** `-threads` of each ffmpeg subprocess (GRANARY_VIDEO_THREADS). */
  videoThreads: number;
  /** Most URLs one mkzip archives (GRANARY_MKZIP_MAX_FILES). */
  mkzipMaxFiles: number;
  /** Largest total of source bytes one mkzip reads (GRANARY_MKZIP_MAX_BYTES). */
  mkzipMaxBytes: number;
  /** Largest document the conversion command reads, bytes (GRANARY_DOC_MAX_SOURCE). */
  docMaxSourceBytes: number;
  /** Largest Markdown source md2html renders, bytes (GRANARY_MD2HTML_MAX_SOURCE). */
  md2htmlMaxSourceBytes: number;
}

/** The input of a stage: the stored object for the first stage, the previous stage's output after that. */
export interface FopSource {
  /** MIME type of the bytes. */
  readonly contentType: string;
  /** Size in bytes. */
  readonly size: number;
  /** The bytes in memory; 400 (`Errors.imageTooLarge`) when `size` exceeds `limits.maxSourceBytes`. */
  bytes(): Promise<Buffer>;
  /**
   * A local file holding the bytes (the stored blob itself, or a temp file owned by the run), valid until the
   * run ends. Never a user-controlled path. Read-only: never write or delete it.
   */
  file(): Promise<string>;
}

/**
 * A resource opened for reading (files/resource-stream.ts; mkzip): its key when local, the size when known (bytes),
 * its modification time, and its bytes — as a stream, or, for an entry of the source's bucket no larger than the
 * `wholeMax` the caller passed, as a whole verified read (`read()`, not started yet: nothing is held until it is
 * called). A failure of either comes after the open: corrupt bytes (599), a storage error, an origin cut short.
 */
export type OpenedResource = {
  /** The entry's key when the URL named an entry of the source's bucket. */
  key?: string;
  size?: number;
  mtime: Date;
} & ({ stream: Readable; read?: undefined } | { read(): Promise<Buffer>; stream?: undefined });

/** External programs a command may run (subprocesses); undefined when not installed. */
export interface FopTools {
  ffmpeg?: string;
  ffprobe?: string;
  heifConvert?: string;
  /** LibreOffice's `soffice` (document conversion; GRANARY_SOFFICE). */
  soffice?: string;
}

/** One image's class probabilities from the nsfwjs model (classes Drawing, Hentai, Neutral, Porn, Sexy; sum ≈ 1). */
export interface NsfwPrediction {
  className: 'Drawing' | 'Hentai' | 'Neutral' | 'Porn' | 'Sexy';
  probability: number;
}

/** The moderation model (fops/moderation-model.ts): classifies 224×224 RGB pixels off the event loop. */
export interface Moderation {
  /**
   * Classifies `pixels` (224 × 224 × 3 bytes, RGB, row-major). Rejects with 599 (`Errors.modelFailed`) when the
   * model cannot load or its worker dies; with 400 `timed out` when `signal` aborts first.
   */
  classify(pixels: Buffer, signal: AbortSignal): Promise<NsfwPrediction[]>;
}

/** What a command may use besides its input: limits, cancellation, temp files and guarded resources. */
export interface FopContext {
  limits: FopLimits;
  /** Aborted on the run's time limit or at shutdown: kill subprocesses, stop work. */
  signal: AbortSignal;
  /** The bucket of the source object (its settings: private, nrop, …). */
  bucket: BucketRecord;
  /** The key of the source object (named in results such as nrop's `fileList[].name`). */
  key: string;
  /** The server's clock (timestamps in results). */
  clock: Clock;
  /** The moderation model (nrop); absent outside a server (offline CLI). */
  moderation?: Moderation;
  /** A fresh path (not yet created) in the run's temp dir, with extension `ext` (e.g. `.mp4`); removed when the run ends. */
  tempFile(ext: string): string;
  /**
   * The bytes of a resource named by a fop parameter (a watermark image): an http(s) URL fetched through the
   * outbound guard, at most `maxBytes` bytes. Errors are Kodo errors (400 bad URL, 403 guard refusal, 478 origin).
   */
  fetchResource(url: string, maxBytes: number): Promise<Buffer>;
  /**
   * Like `fetchResource`, but the bytes as a stream (files/resource-stream.ts; mkzip): an entry of the source's
   * bucket read from storage, any other URL through the outbound guard. Same errors, raised before any byte.
   * `opts.wholeMax`: an entry of the source's bucket of at most that many bytes comes as a whole read instead
   * (`OpenedResource.read`).
   */
  openResource?(url: string, maxBytes: number, opts?: { wholeMax?: number }): Promise<OpenedResource>;
  tools: FopTools;
  /** URLs of entries of the source's bucket (pm3u8, HLS playlists, avconcat's resources). */
  urls?: BucketUrls;
  /** Where a persistent command stores objects besides its output (HLS segments, vsample frames); absent on download URLs. */
  outputs?: SideOutputs;
  /**
   * A local file (read-only, valid until the run ends) of the live entry `key` of the source's bucket, checked like
   * a download (404 missing, 403 disabled or archived). Used by avconcat for its other resources.
   */
  bucketFile?(key: string): Promise<{ path: string; size: number }>;
}

/** Download URLs of the source's bucket (fops/bucket-urls.ts, docs/development/kodo-protocol.md §10.6). */
export interface BucketUrls {
  /** The absolute download URL of `key` in `bucket`: its first bound domain (http), else GRANARY_PUBLIC_URL path style. */
  urlOf(bucket: string, key: string): Promise<string>;
  /** The key of the source's bucket that an absolute URL on this server names (bound domain or path style), if any. */
  keyOf(url: URL): string | undefined;
  /**
   * `url` made a private download URL (`…e=<deadline>&token=<AK>:<sign>`, §2.5) signed with the key pair of the
   * bucket's owner; 403 when that pair no longer exists.
   */
  sign(url: string, deadline: number): string;
}

/** The objects a persistent command stores besides its output (docs/development/kodo-protocol.md §10.6). */
export interface SideOutputs {
  /** Bucket of the command's output; side objects go to the same bucket. */
  bucket: string;
  /** Key of the command's output (the saveas key or the generated one). */
  key: string;
  /**
   * Stores the run's temp file `file` as `key` of `bucket` through putObject (overwriting, with the job's rights);
   * resolves with its hash. Errors: putObject's (413, 403, quota).
   */
  store(key: string, file: string, contentType: string): Promise<string>;
  /** What `store` stored so far, in order. */
  readonly stored: Array<{ key: string; hash: string }>;
}

/**
 * What a command produces: bytes in memory, bytes in a temp file of the run (from `ctx.tempFile`), or a JSON
 * document (always the last stage).
 */
export type FopResult =
  | { body: Buffer; contentType: string }
  | { file: string; size: number; contentType: string }
  | { json: unknown };

/** Which bounded pool a command's work runs in (see run.ts): libvips, subprocesses, or the moderation model. */
export type FopPool = 'image' | 'video' | 'model';

/** One command of the registry: its name, its parameter parser and its implementation. */
export interface FopCommand<P = unknown> {
  name: string;
  /** The pool its work runs in (default `image`). */
  pool?: FopPool;
  /** Runs only as a persistent command (pfop, persistentOps), never on a download URL (e.g. avthumb, §10.6). */
  persistentOnly?: boolean;
  /**
   * The command's outputs are the objects it stored through `ctx.outputs` (vsample frames): its own result is not
   * stored, and the job item names the first stored object plus `keys` (all of them).
   */
  storesItsOutputs?: boolean;
  /** Its result depends on the moment (signed URLs, pm3u8): never kept in the derived-result cache. */
  volatile?: boolean;
  /** Parses the `/`-separated arguments after the name; throws `Errors.badRequest('<name>: …')`. */
  parse(args: string[]): P;
  run(input: FopSource, params: P, ctx: FopContext): Promise<FopResult>;
}

/** One stage of a parsed pipeline. */
export interface FopStage {
  name: string;
  params: unknown;
  /**
   * The stage carried `/ignore-error/1` (docs/development/kodo-protocol.md §10.1): the registry removed it from the arguments before
   * the command parsed them; when processing fails the download URL answers the original object instead.
   */
  ignoreError?: boolean;
}
