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
import { isInlineBlobId } from '../../ports/inline-blob-id.js';
import type { ObjectRecord } from '../../ports/meta.js';
import type { Queryable } from './db.js';
import { rowValues, UPSERT_OBJECT } from './rows.js';

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
 * One more reference to `rec.blobId` (as `addRef`: a new blob's `size`, checksums and `inline` bytes recorded with
 * it) and the entry `rec` inserted or put in place of the one at its (bucket, key), in ONE statement (the blob
 * writes as CTEs of the entry's upsert; they touch other tables, so their order does not matter). A named (prepared)
 * statement.
 */
export async function addRefAndUpsert(c: Queryable, rec: ObjectRecord, sums?: BlobSums, inline?: Buffer): Promise<void> {
  await c.query({
    name: 'granary_add_ref_and_upsert',
    text: `WITH ref AS (
       INSERT INTO blobs (id, refs, size, block_bytes, sums) VALUES ($3, 1, $20::bigint, $21::integer, $22::bytea)
       ON CONFLICT (id) DO UPDATE SET refs = blobs.refs + 1),
     bytes AS (INSERT INTO inline_blobs (id, data) SELECT $3, $23::bytea WHERE $23::bytea IS NOT NULL)
     ${UPSERT_OBJECT}`,
    values: [...rowValues(rec), rec.fsize, sums?.blockBytes ?? null, sums?.crc32 ?? null, inline ?? null],
  });
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
  await released(c, blobId, rows[0]?.refs, freed);
}

/**
 * Deletes the entry at (`bucket`, `key`), whose blob is `blobId`, and releases that reference (as `releaseRef`),
 * the deletion and the count's decrement in one statement.
 */
export async function deleteEntryAndRelease(c: Queryable, bucket: string, key: string, blobId: string, freed: string[]): Promise<void> {
  const { rows } = await c.query<{ refs: number }>(
    `WITH gone AS (DELETE FROM objects WHERE bucket = $1 AND key = $2)
     UPDATE blobs SET refs = refs - 1 WHERE id = $3 RETURNING refs`,
    [bucket, key, blobId],
  );
  await released(c, blobId, rows[0]?.refs, freed);
}

/** After a decrement of `blobId`'s count to `refs` (undefined: no row): what a count of zero frees. */
async function released(c: Queryable, blobId: string, refs: number | undefined, freed: string[]): Promise<void> {
  if (refs === undefined || refs > 0) return;
  // Each: the blob's row and what hangs on it, in one statement.
  if (isManifestId(blobId)) {
    const pieces = await c.query<{ piece_id: string }>(
      `WITH b AS (DELETE FROM blobs WHERE id = $1) DELETE FROM manifest_pieces WHERE manifest_id = $1 RETURNING piece_id, seq`,
      [blobId],
    );
    for (const p of pieces.rows) await releaseRef(c, p.piece_id, freed);
    return;
  }
  if (isInlineBlobId(blobId)) {
    await c.query('WITH b AS (DELETE FROM blobs WHERE id = $1) DELETE FROM inline_blobs WHERE id = $1', [blobId]);
    return;
  }
  await c.query('WITH b AS (DELETE FROM blobs WHERE id = $1) INSERT INTO blob_deletions (id) VALUES ($1) ON CONFLICT DO NOTHING', [
    blobId,
  ]);
  freed.push(blobId);
}

/** Releases several references, in id order (concurrent sweeps then lock blob rows in one order). */
export async function releaseRefs(c: Queryable, blobIds: string[], freed: string[]): Promise<void> {
  for (const id of [...blobIds].sort()) await releaseRef(c, id, freed);
}
