/**
 * Helpers for integrity tests: where an entry's blob lives on disk, flipping a byte in it (bitrot), and a
 * download that tells a complete body from a cut-off transfer.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isInlineBlobId } from '../../src/ports/inline-blob-id.js';
import type { TestServer } from './server.js';

/** Path of the blob file holding `<bucket>:<key>` (FsBlobStore layout `blobs/<aa>/<bb>/<id>`). */
export async function blobPath(s: TestServer, bucket: string, key: string): Promise<string> {
  const rec = await s.running.g.meta.getObject(bucket, key);
  if (!rec) throw new Error(`no entry ${bucket}:${key}`);
  return join(s.dataDir, 'blobs', rec.blobId.slice(0, 2), rec.blobId.slice(2, 4), rec.blobId);
}

/**
 * The blob file and offset in it holding byte `offset` of `<bucket>:<key>`: the entry's blob, or for an object
 * assembled from resumable pieces (a manifest) the piece holding that byte.
 */
export async function storedByte(s: TestServer, bucket: string, key: string, offset: number): Promise<{ path: string; offset: number }> {
  const rec = await s.running.g.meta.getObject(bucket, key);
  if (!rec) throw new Error(`no entry ${bucket}:${key}`);
  let id = rec.blobId;
  let at = offset;
  for (const p of rec.pieces ?? []) {
    id = p.blobId;
    if (at < p.size) break;
    at -= p.size;
  }
  return { path: join(s.dataDir, 'blobs', id.slice(0, 2), id.slice(2, 4), id), offset: at };
}

/**
 * Inverts every bit of byte `offset` of the object `<bucket>:<key>` where it is stored: in its blob file or the
 * piece holding it (storedByte), or — for a small object stored inline — in its `inline_blobs` row (through a
 * second connection, as a failing page would).
 */
export async function flipStoredByte(s: TestServer, bucket: string, key: string, offset: number): Promise<void> {
  const rec = await s.running.g.meta.getObject(bucket, key);
  if (!rec) throw new Error(`no entry ${bucket}:${key}`);
  if (!isInlineBlobId(rec.blobId)) {
    const at = await storedByte(s, bucket, key, offset);
    return flipByte(at.path, at.offset);
  }
  const db = new Database(join(s.dataDir, 'meta.db'));
  try {
    const row = db.prepare('SELECT data FROM inline_blobs WHERE id = ?').get(rec.blobId) as { data: Buffer };
    const data = Buffer.from(row.data);
    data[offset] = (data[offset] as number) ^ 0xff;
    db.prepare('UPDATE inline_blobs SET data = ? WHERE id = ?').run(data, rec.blobId);
  } finally {
    db.close();
  }
}

/** Inverts every bit of the byte at `offset` of the file at `path`, in place. */
export async function flipByte(path: string, offset: number): Promise<void> {
  const fh = await open(path, 'r+');
  try {
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, offset);
    b[0] = (b[0] as number) ^ 0xff;
    await fh.write(b, 0, 1, offset);
  } finally {
    await fh.close();
  }
}

/** A download's outcome: the status, and the body when it arrived whole (undefined when the transfer was cut). */
export interface Fetched {
  status: number;
  body?: Buffer;
  contentLength: number | undefined;
}

/** GETs `url` (with optional headers); a transfer cut by the server gives `body: undefined`. */
export async function fetchWhole(url: string, headers: Record<string, string> = {}): Promise<Fetched> {
  const res = await fetch(url, { headers });
  const len = res.headers.get('content-length');
  const contentLength = len === null ? undefined : Number(len);
  try {
    const body = Buffer.from(await res.arrayBuffer());
    if (contentLength !== undefined && body.length !== contentLength) return { status: res.status, contentLength };
    return { status: res.status, body, contentLength };
  } catch {
    return { status: res.status, contentLength };
  }
}
