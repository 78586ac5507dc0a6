/**
 * Receiving upload bytes: stream → digests (etag, md5, crc32) → a staged blob, with bounded memory.
 * The result is handed to `putObject`, the one commit path of every upload kind.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobStore, StagedBlob } from '../store/blob.js';
import { DigestingStream, type Digests } from './etag.js';
import { ThrottleStream } from './throttle.js';

/** Bytes received and staged (fsynced in the staging area, not yet visible), with their digests. */
export interface ReceivedBody {
  staged: StagedBlob;
  digests: Digests;
}

/** Limits on one received body: `maxBytes` (413 above), and an optional rate in bits per second (trafficLimit). */
export interface ReceiveLimits {
  maxBytes: number;
  bitsPerSecond?: number;
}

/**
 * Streams `source` into a new staged blob while computing its digests.
 * More than `limits.maxBytes` bytes → `Errors.objectTooLarge` (413). On any failure the staged bytes are
 * discarded and the error is rethrown.
 */
export async function receiveBody(blobs: BlobStore, source: Readable, limits: ReceiveLimits): Promise<ReceivedBody> {
  const staged = await blobs.stage();
  const digesting = new DigestingStream(limits.maxBytes);
  try {
    if (limits.bitsPerSecond) {
      await pipeline(source, new ThrottleStream(limits.bitsPerSecond), digesting, staged.sink);
    } else {
      await pipeline(source, digesting, staged.sink);
    }
  } catch (err) {
    await staged.discard();
    throw err;
  }
  return { staged, digests: digesting.digests() };
}
