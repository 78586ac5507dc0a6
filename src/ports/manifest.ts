/**
 * Manifests: an object's bytes as an ordered list of piece blobs (the v1 chunks or v2 parts it was uploaded in),
 * kept in the MetaStore instead of a copy (zero-copy assembly). A manifest is a row of `blobs` like any
 * blob — referenced by entries, counted, shared by copies — whose id can never be a BlobStore id: 'm' followed by
 * 32 hex characters (BlobStore ids are 32 hex characters; FsBlobStore refuses anything else). It holds one
 * reference on each of its pieces; when its own count reaches zero it is dropped and its pieces are released
 * (pieces reaching zero are deleted like any freed blob).
 */
import { randomBytes } from 'node:crypto';
import type { BlobSums } from './blob.js';

/** One piece of a manifest: a blob and its size in bytes. */
export interface ManifestPiece {
  blobId: string;
  size: number;
}

/** A piece as single-entry reads answer it: with its blob's checksums (absent for blobs stored before them). */
export interface StoredPiece extends ManifestPiece {
  sums?: BlobSums;
}

const MANIFEST_ID = /^m[0-9a-f]{32}$/;

/** A fresh manifest id ('m' + 32 hex characters). */
export function newManifestId(): string {
  return `m${randomBytes(16).toString('hex')}`;
}

/** Whether `id` names a manifest (not a blob of the BlobStore). */
export function isManifestId(id: string): boolean {
  return MANIFEST_ID.test(id);
}
