/**
 * Resumable-upload sessions of the PostgreSQL MetaStore (the port of store/sqlite/sessions.ts): v1 blocks
 * (mkblk/bput) and v2 multipart uploads with their parts. Chunk and part blobs hold one reference each
 * (blob-refs.ts) until their session is deleted — by abort, the expiry sweep, or the commit of the object assembled
 * from it (`claimLost` / `dropClaimed`, inside commitPut's transaction, after the manifest took its own references).
 *
 * Concurrency between nodes: a change of a block locks its row (`SELECT … FOR UPDATE`, so appendChunk's
 * compare-and-set on the offset holds); a change of an upload's parts locks the upload's row first (putPart,
 * deleteUpload, a commit claiming it), so a part is never replaced while the upload is deleted or claimed. The
 * expiry sweep takes its rows with `FOR UPDATE SKIP LOCKED` (a session in use is left for the next sweep).
 * Units: sizes and offsets bytes, times Unix seconds.
 */
import type { BlobSums } from '../../ports/blob.js';
import type { BlockRecord, PartRecord, SessionClaim, SessionStore, UploadRecord } from '../../ports/meta.js';
import { addRef, releaseRef, releaseRefs } from './blob-refs.js';
import type { PgDb, Queryable } from './db.js';

interface BlockRow {
  id: string;
  access_key: string;
  size: bigint;
  offset: bigint;
  chunks: string;
  expires_at: bigint;
  sha1: string | null;
}

interface UploadRow {
  id: string;
  access_key: string;
  bucket: string;
  key: string | null;
  created_at: bigint;
  expires_at: bigint;
}

interface PartRow {
  part_number: number;
  blob_id: string;
  size: bigint;
  md5: string;
  etag: string;
  put_time: bigint;
  block_sha1s: Buffer | null;
  checksum: string | null;
}

const toBlock = (r: BlockRow): BlockRecord => ({
  id: r.id,
  accessKey: r.access_key,
  size: Number(r.size),
  offset: Number(r.offset),
  chunks: JSON.parse(r.chunks) as string[],
  expiresAt: Number(r.expires_at),
  ...(r.sha1 !== null ? { sha1: r.sha1 } : {}),
});

const toPart = (r: PartRow): PartRecord => ({
  partNumber: r.part_number,
  blobId: r.blob_id,
  size: Number(r.size),
  md5: r.md5,
  etag: r.etag,
  putTime: Number(r.put_time),
  ...(r.block_sha1s !== null ? { blockSha1s: r.block_sha1s } : {}),
  ...(r.checksum !== null ? { checksum: r.checksum } : {}),
});

/** Sessions removed by one expiry sweep at most (blocks, then uploads). */
const SWEEP_BATCH = 500;

export class PgSessions implements SessionStore {
  constructor(private readonly db: PgDb) {}

  async createBlock(b: BlockRecord, sums?: BlobSums): Promise<void> {
    await this.db.tx(async (c) => {
      await c.query(
        'INSERT INTO blocks (id, access_key, size, "offset", chunks, expires_at, sha1) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [b.id, b.accessKey, b.size, b.offset, JSON.stringify(b.chunks), b.expiresAt, b.sha1 ?? null],
      );
      // The block's one chunk holds `offset` bytes.
      for (const id of b.chunks) await addRef(c, id, b.offset, sums);
    });
  }

  async getBlock(id: string): Promise<BlockRecord | undefined> {
    const { rows } = await this.db.query<BlockRow>('SELECT * FROM blocks WHERE id = $1', [id]);
    return rows[0] ? toBlock(rows[0]) : undefined;
  }

  async appendChunk(
    id: string,
    expectOffset: number,
    chunk: { blobId: string; size: number; sums?: BlobSums },
  ): Promise<{ result: 'ok'; offset: number } | { result: 'mismatch' | 'missing' }> {
    return this.db.tx(async (c) => {
      const { rows } = await c.query<BlockRow>('SELECT * FROM blocks WHERE id = $1 FOR UPDATE', [id]);
      const row = rows[0];
      if (!row) return { result: 'missing' as const };
      if (Number(row.offset) !== expectOffset) return { result: 'mismatch' as const };
      const chunks = [...(JSON.parse(row.chunks) as string[]), chunk.blobId];
      const offset = Number(row.offset) + chunk.size;
      await c.query('UPDATE blocks SET "offset" = $1, chunks = $2 WHERE id = $3', [offset, JSON.stringify(chunks), id]);
      await addRef(c, chunk.blobId, chunk.size, chunk.sums);
      return { result: 'ok' as const, offset };
    });
  }

  /** Deletes blocks `ids` on the transaction `c` (rows locked in id order), releasing their chunks into `freed`. */
  private async dropBlocks(c: Queryable, ids: string[], freed: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const { rows } = await c.query<{ chunks: string }>(
      `DELETE FROM blocks WHERE id IN (SELECT id FROM blocks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE)
       RETURNING chunks`,
      [ids],
    );
    await releaseRefs(c, rows.flatMap((r) => JSON.parse(r.chunks) as string[]), freed);
    return rows.length;
  }

  async deleteBlocks(ids: string[]): Promise<{ freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      await this.dropBlocks(c, ids, freed);
      return { freedBlobs: freed };
    });
  }

  async createUpload(u: UploadRecord): Promise<void> {
    await this.db.query(
      'INSERT INTO uploads (id, access_key, bucket, key, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [u.id, u.accessKey, u.bucket, u.key ?? null, u.createdAt, u.expiresAt],
    );
  }

  async getUpload(id: string): Promise<UploadRecord | undefined> {
    const { rows } = await this.db.query<UploadRow>('SELECT * FROM uploads WHERE id = $1', [id]);
    const r = rows[0];
    if (!r) return undefined;
    const u: UploadRecord = {
      id: r.id,
      accessKey: r.access_key,
      bucket: r.bucket,
      createdAt: Number(r.created_at),
      expiresAt: Number(r.expires_at),
    };
    if (r.key !== null) u.key = r.key;
    return u;
  }

  /** Locks the upload's row on `c`; false when there is no such upload. */
  private async lockUpload(c: Queryable, id: string): Promise<boolean> {
    return (await c.query('SELECT 1 FROM uploads WHERE id = $1 FOR UPDATE', [id])).rows.length === 1;
  }

  async putPart(uploadId: string, p: PartRecord, sums?: BlobSums): Promise<{ result: 'ok' | 'missing'; freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      if (!(await this.lockUpload(c, uploadId))) return { result: 'missing' as const, freedBlobs: freed };
      const old = await c.query<{ blob_id: string }>(
        'SELECT blob_id FROM parts WHERE upload_id = $1 AND part_number = $2',
        [uploadId, p.partNumber],
      );
      await c.query(
        `INSERT INTO parts (upload_id, part_number, blob_id, size, md5, etag, put_time, block_sha1s, checksum)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (upload_id, part_number) DO UPDATE SET blob_id = excluded.blob_id, size = excluded.size,
           md5 = excluded.md5, etag = excluded.etag, put_time = excluded.put_time, block_sha1s = excluded.block_sha1s,
           checksum = excluded.checksum`,
        [uploadId, p.partNumber, p.blobId, p.size, p.md5, p.etag, p.putTime, p.blockSha1s ?? null, p.checksum ?? null],
      );
      await addRef(c, p.blobId, p.size, sums);
      if (old.rows[0]) await releaseRef(c, old.rows[0].blob_id, freed);
      return { result: 'ok' as const, freedBlobs: freed };
    });
  }

  async listParts(uploadId: string, afterPart: number, limit: number): Promise<PartRecord[]> {
    const { rows } = await this.db.query<PartRow>(
      'SELECT * FROM parts WHERE upload_id = $1 AND part_number > $2 ORDER BY part_number LIMIT $3',
      [uploadId, afterPart, limit],
    );
    return rows.map(toPart);
  }

  async listUploads(bucket: string, prefix: string, after: { key: string; id: string } | undefined, limit: number, nowSec: number): Promise<UploadRecord[]> {
    // Keys are COLLATE "C" (byte order); the prefix compares by its leading characters.
    const { rows } = await this.db.query<UploadRow>(
      `SELECT * FROM uploads WHERE bucket = $1 AND expires_at > $2 AND key IS NOT NULL AND left(key, $3) = $4
         AND ($5::text IS NULL OR key > $5 OR (key = $5 AND id > $6))
       ORDER BY key, id LIMIT $7`,
      [bucket, nowSec, [...prefix].length, prefix, after?.key ?? null, after?.id ?? '', limit],
    );
    return rows.map((r) => {
      const u: UploadRecord = { id: r.id, accessKey: r.access_key, bucket: r.bucket, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at) };
      if (r.key !== null) u.key = r.key;
      return u;
    });
  }

  /** Deletes one upload and its parts on the transaction `c`; false when it did not exist. */
  private async dropUpload(c: Queryable, id: string, freed: string[]): Promise<boolean> {
    if ((await c.query('DELETE FROM uploads WHERE id = $1', [id])).rowCount === 0) return false;
    const parts = await c.query<{ blob_id: string }>('DELETE FROM parts WHERE upload_id = $1 RETURNING blob_id', [id]);
    await releaseRefs(c, parts.rows.map((r) => r.blob_id), freed);
    return true;
  }

  async deleteUpload(id: string): Promise<{ deleted: boolean; freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      return { deleted: await this.dropUpload(c, id, freed), freedBlobs: freed };
    });
  }

  /**
   * On the transaction `c`: whether the claimed session is no longer as its assembler read it — 'gone' when a
   * block or the upload was deleted, 'replaced' when a chosen part now holds another blob — else undefined. Locks
   * the session's rows (blocks, or the upload) until the transaction ends.
   */
  async claimLost(c: Queryable, claim: SessionClaim): Promise<'gone' | 'replaced' | undefined> {
    if (claim.kind === 'blocks') {
      const ids = [...new Set(claim.ids)];
      const { rows } = await c.query('SELECT id FROM blocks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [ids]);
      return rows.length === ids.length ? undefined : 'gone';
    }
    if (!(await this.lockUpload(c, claim.id))) return 'gone';
    if (claim.parts.length === 0) return undefined;
    const { rows } = await c.query<{ part_number: number; blob_id: string }>(
      'SELECT part_number, blob_id FROM parts WHERE upload_id = $1 AND part_number = ANY($2::int[])',
      [claim.id, claim.parts.map((p) => p.partNumber)],
    );
    const now = new Map(rows.map((r) => [r.part_number, r.blob_id]));
    return claim.parts.every((p) => now.get(p.partNumber) === p.blobId) ? undefined : 'replaced';
  }

  /** On the transaction `c`, after `claimLost` said the claim holds: deletes the session, releasing its references. */
  async dropClaimed(c: Queryable, claim: SessionClaim, freed: string[]): Promise<void> {
    if (claim.kind === 'upload') await this.dropUpload(c, claim.id, freed);
    else await this.dropBlocks(c, [...new Set(claim.ids)], freed);
  }

  async deleteExpired(nowSec: number): Promise<{ sessions: number; freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      const blocks = await c.query<{ chunks: string }>(
        `DELETE FROM blocks WHERE id IN (
           SELECT id FROM blocks WHERE expires_at <= $1 LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
         RETURNING chunks`,
        [nowSec],
      );
      const uploads = await c.query<{ id: string }>(
        `DELETE FROM uploads WHERE id IN (
           SELECT id FROM uploads WHERE expires_at <= $1 LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
         RETURNING id`,
        [nowSec],
      );
      const parts = uploads.rows.length
        ? await c.query<{ blob_id: string }>('DELETE FROM parts WHERE upload_id = ANY($1::text[]) RETURNING blob_id', [
            uploads.rows.map((r) => r.id),
          ])
        : { rows: [] };
      const blobs = [...blocks.rows.flatMap((r) => JSON.parse(r.chunks) as string[]), ...parts.rows.map((r) => r.blob_id)];
      await releaseRefs(c, blobs, freed);
      return { sessions: blocks.rows.length + uploads.rows.length, freedBlobs: freed };
    });
  }
}
