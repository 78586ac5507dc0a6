/**
 * How an entry is encrypted, for `granary stat` (docs/reference/encryption.md): `serverSide` — what the S3 door
 * records and answers (`x-amz-server-side-encryption`: 'SSE-S3' for AES256, 'SSE-C' for a customer key; absent:
 * none asked) — and `atRest`, whether its stored bytes are in the encrypted format (BlobStore `encryptedAtRest`: the
 * first bytes of its blob, or of its first piece). Objects stored before a master key was set are not encrypted at
 * rest even on an encrypting server.
 */
import type { Granary } from '../../context.js';
import { SSE_META } from '../../buckets/encryption.js';
import type { ObjectRecord } from '../../ports/object-record.js';

export interface EntryEncryption {
  serverSide?: 'SSE-S3' | 'SSE-C';
  /** Undefined when the stored bytes could not be read. */
  atRest?: boolean;
}

/** The encryption of `rec` (one read of its first stored bytes on an encrypting server). */
export async function encryptionOf(g: Granary, rec: ObjectRecord): Promise<EntryEncryption> {
  const out: EntryEncryption = {};
  const sse = rec.meta[SSE_META];
  if (sse === 'AES256') out.serverSide = 'SSE-S3';
  else if (sse?.startsWith('C:')) out.serverSide = 'SSE-C';
  const blobId = rec.pieces?.[0]?.blobId ?? rec.blobId;
  try {
    out.atRest = g.blobs.encryptedAtRest ? await g.blobs.encryptedAtRest(blobId) : false;
  } catch {
    // Unreadable (an empty blob, a missing file): left undefined.
  }
  return out;
}
