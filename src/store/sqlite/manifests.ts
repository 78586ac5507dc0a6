/**
 * Manifests in the SQLite MetaStore (ports/manifest.ts): the manifest itself is a row of `blobs` (refs counted like
 * any blob, `size` = total bytes, no checksums) and its pieces are rows of `manifest_pieces (manifest_id, seq,
 * piece_id, size)`, `seq` 0.. in object order, `size` bytes. Each piece row holds one reference on its blob
 * (BlobRefs: added with the manifest, released when the manifest's own count reaches zero).
 */
import type Database from 'better-sqlite3';
import type { StoredPiece } from '../../ports/manifest.js';

/** The pieces table (created at every open, like the rest of the schema). */
export const MANIFEST_DDL = `
CREATE TABLE IF NOT EXISTS manifest_pieces (
  manifest_id TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  piece_id    TEXT NOT NULL,
  size        INTEGER NOT NULL,
  PRIMARY KEY (manifest_id, seq)
) WITHOUT ROWID;
`;

/** Creates the pieces table in a database of an earlier version (idempotent). */
export function migrateManifests(db: Database.Database): void {
  db.exec(MANIFEST_DDL);
}

interface PieceRow {
  piece_id: string;
  size: bigint;
  block_bytes: bigint | null;
  sums: Buffer | null;
  corrupt: bigint | null;
}

/** Reads of manifests' pieces with their blobs' integrity facts (single-entry reads). */
export class ManifestReads {
  private readonly pieces;

  constructor(db: Database.Database) {
    this.pieces = db
      .prepare(
        `SELECT mp.piece_id, mp.size, bl.block_bytes, bl.sums, bl.corrupt
         FROM manifest_pieces mp LEFT JOIN blobs bl ON bl.id = mp.piece_id
         WHERE mp.manifest_id = ? ORDER BY mp.seq`,
      )
      .safeIntegers(true);
  }

  /**
   * The pieces of manifest `id` in order, with their checksums, and whether any is corrupt (a piece whose blob row
   * is missing counts as corrupt: its bytes are gone).
   */
  piecesOf(id: string): { pieces: StoredPiece[]; corrupt: boolean } {
    let corrupt = false;
    const pieces = (this.pieces.all(id) as PieceRow[]).map((r) => {
      const p: StoredPiece = { blobId: r.piece_id, size: Number(r.size) };
      if (r.sums !== null && r.block_bytes !== null) p.sums = { blockBytes: Number(r.block_bytes), crc32: r.sums };
      if (r.corrupt === null || r.corrupt !== 0n) corrupt = true;
      return p;
    });
    return { pieces, corrupt };
  }
}
