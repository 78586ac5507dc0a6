/**
 * Resumable-upload sessions of the SQLite MetaStore: v1 blocks (mkblk/bput) and v2 multipart uploads with their
 * parts. Chunk and part blobs hold one reference each (BlobRefs) until their session is deleted — by abort, the
 * expiry sweep, or the commit of the object assembled from it (`claimLost` / `dropClaimed`, inside commitPut's
 * transaction, after the manifest took its own references).
 */
import type Database from 'better-sqlite3';
import type { BlobSums } from '../../ports/blob.js';
import type { BlockRecord, PartRecord, SessionClaim, SessionStore, UploadRecord } from '../../ports/meta.js';
import type { BlobRefs } from './blob-refs.js';

interface BlockRow {
  id: string;
  access_key: string;
  size: number;
  offset: number;
  chunks: string;
  expires_at: number;
  sha1: string | null;
}

interface UploadRow {
  id: string;
  access_key: string;
  bucket: string;
  key: string | null;
  created_at: number;
  expires_at: number;
}

interface PartRow {
  part_number: number;
  blob_id: string;
  size: number;
  md5: string;
  etag: string;
  put_time: number;
  block_sha1s: Buffer | null;
  checksum: string | null;
}

const toBlock = (r: BlockRow): BlockRecord => ({
  id: r.id,
  accessKey: r.access_key,
  size: r.size,
  offset: r.offset,
  chunks: JSON.parse(r.chunks) as string[],
  expiresAt: r.expires_at,
  ...(r.sha1 !== null ? { sha1: r.sha1 } : {}),
});

/** An upload row as a record. */
function toUpload(r: UploadRow): UploadRecord {
  const u: UploadRecord = { id: r.id, accessKey: r.access_key, bucket: r.bucket, createdAt: r.created_at, expiresAt: r.expires_at };
  if (r.key !== null) u.key = r.key;
  return u;
}

const toPart = (r: PartRow): PartRecord => ({
  partNumber: r.part_number,
  blobId: r.blob_id,
  size: r.size,
  md5: r.md5,
  etag: r.etag,
  putTime: r.put_time,
  ...(r.block_sha1s !== null ? { blockSha1s: r.block_sha1s } : {}),
  ...(r.checksum !== null ? { checksum: r.checksum } : {}),
});

export class SqliteSessions implements SessionStore {
  private readonly st;

  constructor(
    private readonly db: Database.Database,
    private readonly refs: BlobRefs,
  ) {
    this.st = {
      insertBlock: db.prepare(
        'INSERT INTO blocks (id, access_key, size, offset, chunks, expires_at, sha1) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      getBlock: db.prepare('SELECT * FROM blocks WHERE id = ?'),
      setBlock: db.prepare('UPDATE blocks SET offset = ?, chunks = ? WHERE id = ?'),
      deleteBlock: db.prepare('DELETE FROM blocks WHERE id = ?'),
      expiredBlocks: db.prepare('SELECT * FROM blocks WHERE expires_at <= ? LIMIT 500'),
      insertUpload: db.prepare(
        'INSERT INTO uploads (id, access_key, bucket, key, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      getUpload: db.prepare('SELECT * FROM uploads WHERE id = ?'),
      listUploads: db.prepare(
        `SELECT * FROM uploads WHERE bucket = @bucket AND expires_at > @now AND key IS NOT NULL
           AND substr(CAST(key AS BLOB), 1, @plen) = @prefix
           AND (@hasAfter = 0 OR CAST(key AS BLOB) > @afterKey OR (CAST(key AS BLOB) = @afterKey AND id > @afterId))
         ORDER BY CAST(key AS BLOB), id LIMIT @limit`,
      ),
      deleteUpload: db.prepare('DELETE FROM uploads WHERE id = ?'),
      expiredUploads: db.prepare('SELECT id FROM uploads WHERE expires_at <= ? LIMIT 500'),
      getPart: db.prepare('SELECT * FROM parts WHERE upload_id = ? AND part_number = ?'),
      upsertPart: db.prepare(
        `INSERT INTO parts (upload_id, part_number, blob_id, size, md5, etag, put_time, block_sha1s, checksum)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (upload_id, part_number) DO UPDATE SET blob_id = excluded.blob_id, size = excluded.size,
           md5 = excluded.md5, etag = excluded.etag, put_time = excluded.put_time, block_sha1s = excluded.block_sha1s,
           checksum = excluded.checksum`,
      ),
      listParts: db.prepare(
        'SELECT * FROM parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?',
      ),
      allPartBlobs: db.prepare('SELECT blob_id FROM parts WHERE upload_id = ?'),
      deleteParts: db.prepare('DELETE FROM parts WHERE upload_id = ?'),
    };
  }

  async createBlock(b: BlockRecord, sums?: BlobSums): Promise<void> {
    this.db.transaction(() => {
      this.st.insertBlock.run(b.id, b.accessKey, b.size, b.offset, JSON.stringify(b.chunks), b.expiresAt, b.sha1 ?? null);
      // The block's one chunk holds `offset` bytes.
      for (const id of b.chunks) this.refs.add(id, b.offset, sums);
    }).immediate();
  }

  async getBlock(id: string): Promise<BlockRecord | undefined> {
    const row = this.st.getBlock.get(id) as BlockRow | undefined;
    return row ? toBlock(row) : undefined;
  }

  async appendChunk(
    id: string,
    expectOffset: number,
    chunk: { blobId: string; size: number; sums?: BlobSums },
  ): Promise<{ result: 'ok'; offset: number } | { result: 'mismatch' | 'missing' }> {
    return this.db.transaction(() => {
      const row = this.st.getBlock.get(id) as BlockRow | undefined;
      if (!row) return { result: 'missing' as const };
      if (row.offset !== expectOffset) return { result: 'mismatch' as const };
      const chunks = [...(JSON.parse(row.chunks) as string[]), chunk.blobId];
      const offset = row.offset + chunk.size;
      this.st.setBlock.run(offset, JSON.stringify(chunks), id);
      this.refs.add(chunk.blobId, chunk.size, chunk.sums);
      return { result: 'ok' as const, offset };
    }).immediate();
  }

  /** Deletes one block inside a transaction. */
  private dropBlock(row: BlockRow, freed: string[]): void {
    this.st.deleteBlock.run(row.id);
    for (const blobId of JSON.parse(row.chunks) as string[]) this.refs.release(blobId, freed);
  }

  async deleteBlocks(ids: string[]): Promise<{ freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      for (const id of ids) {
        const row = this.st.getBlock.get(id) as BlockRow | undefined;
        if (row) this.dropBlock(row, freed);
      }
      return { freedBlobs: freed };
    }).immediate();
  }

  async createUpload(u: UploadRecord): Promise<void> {
    this.st.insertUpload.run(u.id, u.accessKey, u.bucket, u.key ?? null, u.createdAt, u.expiresAt);
  }

  async getUpload(id: string): Promise<UploadRecord | undefined> {
    const r = this.st.getUpload.get(id) as UploadRow | undefined;
    return r ? toUpload(r) : undefined;
  }

  async putPart(uploadId: string, p: PartRecord, sums?: BlobSums): Promise<{ result: 'ok' | 'missing'; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      if (!this.st.getUpload.get(uploadId)) return { result: 'missing' as const, freedBlobs: freed };
      const old = this.st.getPart.get(uploadId, p.partNumber) as PartRow | undefined;
      this.st.upsertPart.run(uploadId, p.partNumber, p.blobId, p.size, p.md5, p.etag, p.putTime, p.blockSha1s ?? null, p.checksum ?? null);
      this.refs.add(p.blobId, p.size, sums);
      if (old) this.refs.release(old.blob_id, freed);
      return { result: 'ok' as const, freedBlobs: freed };
    }).immediate();
  }

  async listParts(uploadId: string, afterPart: number, limit: number): Promise<PartRecord[]> {
    return (this.st.listParts.all(uploadId, afterPart, limit) as PartRow[]).map(toPart);
  }

  async listUploads(bucket: string, prefix: string, after: { key: string; id: string } | undefined, limit: number, nowSec: number): Promise<UploadRecord[]> {
    // Keys compare byte-wise (BLOB casts), as the listing of entries does; the prefix by its UTF-8 bytes.
    const rows = this.st.listUploads.all({
      bucket,
      now: nowSec,
      prefix: Buffer.from(prefix),
      plen: Buffer.byteLength(prefix),
      afterKey: after ? Buffer.from(after.key) : Buffer.alloc(0),
      hasAfter: after ? 1 : 0,
      afterId: after?.id ?? '',
      limit,
    }) as UploadRow[];
    return rows.map(toUpload);
  }

  /** Deletes one upload and its parts inside a transaction. */
  private dropUpload(id: string, freed: string[]): boolean {
    if (this.st.deleteUpload.run(id).changes === 0) return false;
    for (const r of this.st.allPartBlobs.all(id) as { blob_id: string }[]) this.refs.release(r.blob_id, freed);
    this.st.deleteParts.run(id);
    return true;
  }

  async deleteUpload(id: string): Promise<{ deleted: boolean; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      return { deleted: this.dropUpload(id, freed), freedBlobs: freed };
    }).immediate();
  }

  /**
   * Inside a transaction: whether the claimed session is no longer as its assembler read it — 'gone' when a block
   * or the upload was deleted, 'replaced' when a chosen part now holds another blob — else undefined.
   */
  claimLost(claim: SessionClaim): 'gone' | 'replaced' | undefined {
    if (claim.kind === 'blocks') return claim.ids.every((id) => this.st.getBlock.get(id)) ? undefined : 'gone';
    if (!this.st.getUpload.get(claim.id)) return 'gone';
    for (const p of claim.parts) {
      if ((this.st.getPart.get(claim.id, p.partNumber) as PartRow | undefined)?.blob_id !== p.blobId) return 'replaced';
    }
    return undefined;
  }

  /** Inside a transaction, after `claimLost` said the claim holds: deletes the session, releasing its references. */
  dropClaimed(claim: SessionClaim, freed: string[]): void {
    if (claim.kind === 'upload') {
      this.dropUpload(claim.id, freed);
      return;
    }
    for (const id of claim.ids) {
      const row = this.st.getBlock.get(id) as BlockRow | undefined;
      if (row) this.dropBlock(row, freed);
    }
  }

  async deleteExpired(nowSec: number): Promise<{ sessions: number; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      let sessions = 0;
      for (const row of this.st.expiredBlocks.all(nowSec) as BlockRow[]) {
        this.dropBlock(row, freed);
        sessions++;
      }
      for (const { id } of this.st.expiredUploads.all(nowSec) as { id: string }[]) {
        if (this.dropUpload(id, freed)) sessions++;
      }
      return { sessions, freedBlobs: freed };
    }).immediate();
  }
}
