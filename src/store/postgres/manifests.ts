/**
 * Manifests in the PostgreSQL MetaStore (ports/manifest.ts; the port of store/sqlite/manifests.ts): the manifest
 * itself is a row of `blobs` (refs counted like any blob, `size` = total bytes, no checksums) and its pieces are rows
 * of `manifest_pieces (manifest_id, seq, piece_id, size)`, `seq` 0.. in object order, `size` bytes. Each piece row
 * holds one reference on its blob (blob-refs.ts: added with the manifest, released when the manifest's own count
 * reaches zero). Here: the reads of single-entry reads.
 */
import type { StoredPiece } from '../../ports/manifest.js';
import type { Queryable } from './db.js';

interface PieceRow {
  piece_id: string;
  size: bigint;
  block_bytes: number | null;
  sums: Buffer | null;
  corrupt: boolean | null;
}

/**
 * The pieces of manifest `id` in order, with their checksums, and whether any is corrupt (a piece whose blob row
 * is missing counts as corrupt: its bytes are gone).
 */
export async function piecesOf(c: Queryable, id: string): Promise<{ pieces: StoredPiece[]; corrupt: boolean }> {
  const { rows } = await c.query<PieceRow>(
    `SELECT mp.piece_id, mp.size, bl.block_bytes, bl.sums, bl.corrupt
     FROM manifest_pieces mp LEFT JOIN blobs bl ON bl.id = mp.piece_id
     WHERE mp.manifest_id = $1 ORDER BY mp.seq`,
    [id],
  );
  let corrupt = false;
  const pieces = rows.map((r) => {
    const p: StoredPiece = { blobId: r.piece_id, size: Number(r.size) };
    if (r.sums !== null && r.block_bytes !== null) p.sums = { blockBytes: Number(r.block_bytes), crc32: r.sums };
    if (r.corrupt === null || r.corrupt) corrupt = true;
    return p;
  });
  return { pieces, corrupt };
}
