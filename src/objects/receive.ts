/**
 * Receiving upload bytes: stream → digests (etag, md5, crc32) → a staged blob, with bounded memory.
 * The result is handed to `putObject`, the one commit path of every upload kind (form, chunks and parts, fetch,
 * saveas and job outputs all come through here).
 */
import { bindCustomerKey } from '../ports/customer-key.js';
import type { Readable } from 'node:stream';
import { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Granary } from '../context.js';
import type { StagedBlob } from '../ports/blob.js';
import type { ManifestPiece } from '../ports/manifest.js';
import type { SessionClaim } from '../ports/meta.js';
import { DigestingStream, type DigestChoice, type Digests } from './etag.js';
import { SpillingStage } from './spill-stage.js';
import { chain } from './stream-chain.js';
import { ThrottleStream } from './throttle.js';

/** Bytes received and staged (written to the staging area, not yet durable nor visible), with their digests. */
export interface ReceivedBody {
  staged: StagedBlob;
  digests: Digests;
}

/**
 * What putObject commits: bytes received into a staged blob (a ReceivedBody), or an upload assembled from pieces
 * already stored (v1 mkfile, v2 complete: objects/resumable/assemble.ts) whose digests come from what was recorded
 * when the pieces arrived. `staged.seal()` makes the body addressable and answers its id: the sealed blob's, or a
 * new manifest id. `md5`, `crc32` and `sums` are absent for an assembled body (they cannot be composed from the
 * pieces': docs/development/kodo-protocol.md §8.2 guarantees md5 only for direct uploads; each piece keeps its own checksums).
 */
export interface PutBody {
  staged: Pick<StagedBlob, 'seal' | 'discard' | 'inline'>;
  digests: Pick<Digests, 'size' | 'etag' | 'head'> & Partial<Pick<Digests, 'md5' | 'crc32' | 'sums'>>;
  /** Set for an assembled body: its pieces in order, the session they come from, and the error when it is lost. */
  manifest?: {
    pieces: ManifestPiece[];
    claim: SessionClaim;
    /** The error to answer when the commit found the session gone or a piece replaced meanwhile. */
    lost(reason: 'gone' | 'replaced'): Error;
  };
}

/**
 * Limits on one received body: `maxBytes` (413 above), an optional rate in bits per second (trafficLimit), and
 * the bytes the client declared it will send (Content-Length), checked against the free-space reserve up front.
 */
export interface ReceiveLimits {
  maxBytes: number;
  bitsPerSecond?: number;
  expectedBytes?: number;
  /**
   * Content up to this many bytes is kept in memory and committed inline with its entry (GRANARY_INLINE_MAX;
   * objects/spill-stage.ts). Only for bodies headed straight to putObject; absent or 0 = always a file.
   */
  inlineMax?: number;
  /** Optional digests to skip (etag.ts DigestChoice): all are computed by default. */
  digests?: DigestChoice;
}

/**
 * Streams `source` into a new staged blob while computing its digests.
 * Refused before reading anything (599 storageFull) while free space is under the reserve. More than
 * `limits.maxBytes` bytes → `Errors.objectTooLarge` (413). On any failure the staged bytes are discarded and the
 * error is rethrown (a file-system error keeps its errno code: the error handler maps it to the 599 family).
 */
export async function receiveBody(g: Pick<Granary, 'blobs' | 'space'>, source: Readable, limits: ReceiveLimits): Promise<ReceivedBody> {
  // Always through the spilling stage: it writes in 256 KiB batches (spill-stage.ts), inline or not.
  // The file is opened once the content outgrows the inline size, from a stream callback: with this call's SSE-C key
  // (ports/customer-key.ts), not whatever context the source's events carry.
  const inScope = bindCustomerKey();
  const staged = new SpillingStage(() => inScope(() => g.blobs.stage()), limits.inlineMax ?? 0);
  // The reserve is checked as the pipeline starts, so a refusal fails the pipeline like any other error: the
  // source is destroyed the way pipeline() does it (a server request keeps its socket for the answer).
  const digesting = new DigestingStream(limits.maxBytes, () => g.space.require(limits.expectedBytes ?? 0), limits.digests);
  try {
    if (limits.bitsPerSecond) {
      await pipeline(source, new ThrottleStream(limits.bitsPerSecond), digesting, staged.sink);
    } else if (source instanceof IncomingMessage) {
      // Chunk and part requests, fetched responses: pipeline() keeps a server request's socket for the answer.
      await pipeline(source, digesting, staged.sink);
    } else {
      // Form files (busboy) and fop outputs: the cheaper chain (stream-chain.ts).
      await chain(source, digesting, staged.sink);
    }
  } catch (err) {
    await staged.discard();
    throw err;
  }
  return { staged, digests: digesting.digests() };
}

/**
 * Seals a staged body (its blob id); when sealing fails (a full disk refusing the rename's directory, an I/O
 * error) the staged bytes are discarded before the error is rethrown, so no staging file outlives the request.
 */
export async function sealOrDiscard(staged: Pick<StagedBlob, 'seal' | 'discard'>): Promise<string> {
  try {
    return await staged.seal();
  } catch (err) {
    await staged.discard().catch(() => undefined);
    throw err;
  }
}
