/**
 * Ids of inline blobs (bytes kept in the metadata database, store/inline-blob-store.ts): 'i' + 32 hex characters,
 * never a file blob id. The contract between the upload path that decides to inline (objects/spill-stage.ts) and
 * the stores that read, count and copy such blobs.
 */
import { randomHexId } from '../random-id.js';

const INLINE_ID_RE = /^i[0-9a-f]{32}$/;

/** A fresh inline blob id. */
export function newInlineBlobId(): string {
  return `i${randomHexId()}`;
}

/** Whether `blobId` names an inline blob (bytes in the metadata database). */
export function isInlineBlobId(blobId: string): boolean {
  return INLINE_ID_RE.test(blobId);
}
