/**
 * Blob reference counting inside PostgreSQL transactions, shared by entries and upload sessions (the port of
 * store/sqlite/blob-refs.ts). Counts change with single atomic statements on the blob's row —
 * `INSERT … ON CONFLICT DO UPDATE SET refs = blobs.refs + 1` and `UPDATE … SET refs = refs - 1 RETURNING refs` —
 * which lock the row until the transaction ends, so concurrent changes of one blob's count from several nodes
 * never lose an update. A blob whose count reaches zero is recorded in `blob_deletions` in the same transaction and
 * reported as freed: the caller deletes its bytes after the commit (a crash in between is finished at start).
 * Manifests (ports/manifest.ts) are counted the same way; one whose count reaches zero has no file: its row and its
 * piece rows are deleted and each piece is released in turn (pieces reaching zero are freed as above).
 * Inline blobs (store/inline-blob-store.ts) keep their bytes in `inline_blobs`, deleted with their last reference.
 */
import type { BlobSums } from '../../ports/blob.js';
import { isManifestId, type ManifestPiece } from '../../ports/manifest.js';
import { isInlineBlobId } from '../inline-blob-store.js';
import type { Queryable } from './db.js';

/**
 * One more reference to `blobId` on the transaction `c`. A new blob's `size` (bytes) and checksums are recorded
 * with its first reference; later references leave them as they are. `inline`: the bytes of a new inline blob.
 */
export async function addRef(c: Queryable, blobId: string, size?: number, sums?: BlobSums, inline?: Buffer): Promise<void> {
  await c.query(
    `INSERT INTO blobs (id, refs, size, block_bytes, sums) VALUES ($1, 1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET refs = blobs.refs + 1`,
    [blobId, size ?? null, sums?.blockBytes ?? null, sums?.crc32 ?? null],
  );
  if (inline) await c.query('INSERT INTO inline_blobs (id, data) VALUES ($1, $2)', [blobId, inline]);
}

/**
 * Records a new manifest `id` of `size` bytes with its first reference, its pieces in order (seq 0..), and one
 * reference on each piece, on the transaction `c`.
 */
export async function addManifest(c: Queryable, id: string, size: number, pieces: ManifestPiece[]): Promise<void> {
  await addRef(c, id, size);
  if (pieces.length === 0) return;
  await c.query(
    `INSERT INTO manifest_pieces (manifest_id, seq, piece_id, size)
     SELECT $1, t.seq - 1, t.piece_id, t.size FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS t(piece_id, size, seq)`,
    [id, pieces.map((p) => p.blobId), pieces.map((p) => p.size)],
  );
  for (const p of pieces) await addRef(c, p.blobId, p.size);
}

/**
 * One reference fewer on the transaction `c`; at zero a file blob is queued for deletion and pushed to `freed`, an
 * inline blob's bytes are deleted right here (no file), a manifest is dropped and its pieces released. A blob
 * without a row (never counted) is left alone.
 */
export async function releaseRef(c: Queryable, blobId: string, freed: string[]): Promise<void> {
  const { rows } = await c.query<{ refs: number }>('UPDATE blobs SET refs = refs - 1 WHERE id = $1 RETURNING refs', [blobId]);
  const row = rows[0];
  if (!row || row.refs > 0) return;
  await c.query('DELETE FROM blobs WHERE id = $1', [blobId]);
  if (isManifestId(blobId)) {
    const pieces = await c.query<{ piece_id: string }>(
      'DELETE FROM manifest_pieces WHERE manifest_id = $1 RETURNING piece_id, seq',
      [blobId],
    );
    for (const p of pieces.rows) await releaseRef(c, p.piece_id, freed);
    return;
  }
  if (isInlineBlobId(blobId)) {
    await c.query('DELETE FROM inline_blobs WHERE id = $1', [blobId]);
    return;
  }
  await c.query('INSERT INTO blob_deletions (id) VALUES ($1) ON CONFLICT DO NOTHING', [blobId]);
  freed.push(blobId);
}

/** Releases several references, in id order (concurrent sweeps then lock blob rows in one order). */
export async function releaseRefs(c: Queryable, blobIds: string[], freed: string[]): Promise<void> {
  for (const id of [...blobIds].sort()) await releaseRef(c, id, freed);
}
