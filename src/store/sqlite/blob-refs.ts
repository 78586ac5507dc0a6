/**
 * Blob reference counting inside SQLite transactions, shared by entries and upload sessions. A blob whose count
 * reaches zero is recorded in `blob_deletions` in the same transaction and reported as freed: the caller deletes
 * its bytes after the commit (a crash in between is finished at start).
 * Manifests (manifests.ts) are counted the same way; one whose count reaches zero has no file: its row and its
 * piece rows are deleted and each piece is released in turn (pieces reaching zero are freed as above).
 */
import type Database from 'better-sqlite3';
import type { BlobSums } from '../../ports/blob.js';
import { isInlineBlobId } from '../../ports/inline-blob-id.js';
import { isManifestId, type ManifestPiece } from '../../ports/manifest.js';

export class BlobRefs {
  private readonly add_;
  private readonly dec;
  private readonly drop;
  private readonly queue;
  private readonly addInline;
  private readonly dropInline;
  private readonly insertPiece;
  private readonly piecesOf;
  private readonly dropPieces;

  constructor(db: Database.Database) {
    this.add_ = db.prepare(
      'INSERT INTO blobs (id, refs, size, block_bytes, sums) VALUES (?, 1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET refs = refs + 1',
    );
    this.dec = db.prepare('UPDATE blobs SET refs = refs - 1 WHERE id = ? RETURNING refs');
    this.drop = db.prepare('DELETE FROM blobs WHERE id = ?');
    this.queue = db.prepare('INSERT OR IGNORE INTO blob_deletions (id) VALUES (?)');
    this.addInline = db.prepare('INSERT INTO inline_blobs (id, data) VALUES (?, ?)');
    this.dropInline = db.prepare('DELETE FROM inline_blobs WHERE id = ?');
    this.insertPiece = db.prepare('INSERT INTO manifest_pieces (manifest_id, seq, piece_id, size) VALUES (?, ?, ?, ?)');
    this.piecesOf = db.prepare('SELECT piece_id FROM manifest_pieces WHERE manifest_id = ? ORDER BY seq');
    this.dropPieces = db.prepare('DELETE FROM manifest_pieces WHERE manifest_id = ?');
  }

  /**
   * One more reference to `blobId` (call inside a transaction). A new blob's `size` (bytes) and checksums are
   * recorded with its first reference; later references leave them as they are. `inline`: the bytes of a new
   * inline blob (store/inline-blob-store.ts), kept in `inline_blobs`.
   */
  add(blobId: string, size?: number, sums?: BlobSums, inline?: Buffer): void {
    this.add_.run(blobId, size ?? null, sums?.blockBytes ?? null, sums?.crc32 ?? null);
    if (inline) this.addInline.run(blobId, inline);
  }

  /**
   * Records a new manifest `id` of `size` bytes with its first reference, its pieces in order, and one reference
   * on each piece (inside a transaction).
   */
  addManifest(id: string, size: number, pieces: ManifestPiece[]): void {
    this.add(id, size);
    pieces.forEach((p, seq) => {
      this.insertPiece.run(id, seq, p.blobId, p.size);
      this.add(p.blobId, p.size);
    });
  }

  /**
   * One reference fewer; at zero a file blob is queued for deletion and pushed to `freed`, an inline blob's bytes
   * are deleted right here (no file), a manifest is dropped and its pieces released.
   */
  release(blobId: string, freed: string[]): void {
    const row = this.dec.get(blobId) as { refs: number } | undefined;
    if (!row || row.refs > 0) return;
    this.drop.run(blobId);
    if (isManifestId(blobId)) {
      const pieces = this.piecesOf.all(blobId) as { piece_id: string }[];
      this.dropPieces.run(blobId);
      for (const p of pieces) this.release(p.piece_id, freed);
      return;
    }
    if (isInlineBlobId(blobId)) {
      this.dropInline.run(blobId);
      return;
    }
    this.queue.run(blobId);
    freed.push(blobId);
  }
}
