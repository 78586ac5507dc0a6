/**
 * Resumable upload v1 (docs/development/kodo-protocol.md §5): mkblk (first chunk of a block), bput (next chunk), mkfile (join blocks).
 *
 * Blocks are 4 MiB except the last of a file. Every chunk is sealed as a blob at once (on disk, never in memory)
 * and recorded with its block in the MetaStore, so blocks survive a restart until they expire (7 days).
 * The ctx rule: a chunk is accepted only with the latest ctx of its block and the matching offset; anything else
 * (old/replayed ctx, wrong offset, other block, expired, forged, another key's block) → 701.
 * mkfile checks every block is complete, the sizes add up, and commits through putObject (the put policy applies
 * exactly as in form upload) a manifest of the blocks' chunks (assemble.ts: no copy); the blocks are consumed in
 * the commit transaction. The etag comes from the blocks' SHA-1s: recorded at mkblk for a block sent as one
 * chunk, computed at mkfile (reading that block only, ≤ 4 MiB) for a block sent as several.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ACCOUNT, authorizeBucket } from '../../auth/authorize.js';
import { urlsafeB64Decode, urlsafeB64Encode } from '../../auth/base64.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import { nowSeconds } from '../../ports/clock.js';
import type { BlobSums } from '../../ports/blob.js';
import type { BlockRecord } from '../../ports/meta.js';
import { BLOCK_SIZE, etagFromBlockDigests } from '../etag.js';
import { putObject, type PutRequest, type PutResult } from '../put-object.js';
import { receiveBody, sealOrDiscard } from '../receive.js';
import { assembledBody, sha1OfPieces, storedPieces } from './assemble.js';
import { decodeCtx, encodeCtx } from './ctx.js';

/** Lifetime of a block and its ctx, seconds. */
export const BLOCK_TTL_SECONDS = 7 * 86400;

/** The answer to mkblk and bput (§5.2): `crc32` is a JSON number (CRC-32 of this request's body). */
export interface BlockAnswer {
  ctx: string;
  checksum: string;
  crc32: number;
  offset: number;
  host: string;
  expired_at: number;
}

/**
 * The block answer. `checksum` is the SHA-1 of the block so far: given by the caller when known (a block's first
 * chunk: its etag is 0x16‖sha1), else computed by re-reading the block's chunks (≤ 4 MiB).
 */
async function answer(
  g: Granary,
  block: BlockRecord,
  offset: number,
  crc32: number,
  checksum: string | (() => Promise<string>),
): Promise<BlockAnswer> {
  return {
    ctx: await encodeCtx(g.meta, { blockId: block.id, offset, expiresAt: block.expiresAt }),
    checksum: typeof checksum === 'string' ? checksum : await checksum(),
    crc32,
    offset,
    host: g.publicUrl,
    expired_at: block.expiresAt,
  };
}

/** Who sends a chunk: the upload token's AccessKey and scope bucket, and the declared body size (Content-Length). */
export interface ChunkSender {
  accessKey: string;
  bucket: string;
  declaredBytes?: number;
}

/**
 * Receives one chunk of at most `maxBytes` into a sealed blob; 400 when it is empty or larger (a larger declared
 * Content-Length is refused before reading).
 */
async function receiveChunk(
  g: Granary,
  body: Readable,
  maxBytes: number,
  declaredBytes: number | undefined,
): Promise<{ blobId: string; size: number; crc32: number; sha1: string; sums: BlobSums }> {
  if (declaredBytes !== undefined && declaredBytes > maxBytes) {
    throw Errors.badBlock(`the chunk (${declaredBytes} bytes) is larger than the rest of its block (${maxBytes})`);
  }
  let received;
  try {
    // No MD5: a chunk's is never read (the assembled object has none: docs/development/kodo-protocol.md §8.2).
    received = await receiveBody(g, body, {
      maxBytes,
      digests: { md5: false },
      ...(declaredBytes !== undefined ? { expectedBytes: declaredBytes } : {}),
    });
  } catch (err) {
    if (isKodoError(err, 'objectTooLarge')) throw Errors.badBlock('the chunk is larger than the rest of its block');
    throw err;
  }
  if (received.digests.size === 0) {
    await received.staged.discard();
    throw Errors.badBlock('empty chunk');
  }
  const { size, crc32, etag, sums } = received.digests;
  // A chunk is at most 4 MiB, so its etag is 0x16‖sha1(chunk): the SHA-1 without reading the bytes again.
  const sha1 = urlsafeB64Encode(urlsafeB64Decode(etag).subarray(1));
  return { blobId: await sealOrDiscard(received.staged), size, crc32, sha1, sums };
}

/**
 * `POST /mkblk/<blockSize>`: creates a block with its first chunk. 400 for a size outside 0..4 MiB; 631/403 when
 * the token's key may not write the scope bucket (refused here, before any byte is stored). `mkblk/0` with an empty
 * body is an empty block (see makeEmptyBlock).
 */
export async function makeBlock(g: Granary, sender: ChunkSender, blockSize: number, body: Readable): Promise<BlockAnswer> {
  if (!Number.isInteger(blockSize) || blockSize < 0 || blockSize > BLOCK_SIZE) {
    throw Errors.badBlock(`block size must be 0..${BLOCK_SIZE}`);
  }
  // Chunks are no object yet: the account here; a sub-user's right on the key when mkfile commits (putObject).
  await authorizeBucket(g, sender.accessKey, sender.bucket, { action: ACCOUNT });
  if (blockSize === 0) return makeEmptyBlock(g, sender, body);
  const chunk = await receiveChunk(g, body, blockSize, sender.declaredBytes);
  const block: BlockRecord = {
    id: randomBytes(16).toString('hex'),
    accessKey: sender.accessKey,
    size: blockSize,
    offset: chunk.size,
    chunks: [chunk.blobId],
    expiresAt: nowSeconds(g.clock) + BLOCK_TTL_SECONDS,
  };
  // A block sent whole: its SHA-1 is the chunk's, kept for the object's etag at mkfile.
  if (chunk.size === blockSize) block.sha1 = chunk.sha1;
  try {
    await g.meta.sessions.createBlock(block, chunk.sums);
  } catch (err) {
    await g.blobs.remove(chunk.blobId);
    throw err;
  }
  return answer(g, block, block.offset, chunk.crc32, chunk.sha1);
}

/** SHA-1 of no bytes, URL-safe base64 (the checksum of an empty block). */
const EMPTY_SHA1 = urlsafeB64Encode(createHash('sha1').digest());

/**
 * `POST /mkblk/0`: an empty block, answered with its ctx (`offset` 0, `crc32` 0). The Java SDK's StreamUploader
 * sends one after a stream of an exact multiple of 4 MiB (it learns the end only by reading it) and lists its ctx
 * last at mkfile, where it adds no bytes and no block to the etag. 400 when the body is not empty.
 */
async function makeEmptyBlock(g: Granary, sender: ChunkSender, body: Readable): Promise<BlockAnswer> {
  if (sender.declaredBytes !== undefined && sender.declaredBytes > 0) throw Errors.badBlock('a block of 0 bytes takes an empty body');
  for await (const chunk of body) {
    if ((chunk as Buffer).length > 0) throw Errors.badBlock('a block of 0 bytes takes an empty body');
  }
  const block: BlockRecord = {
    id: randomBytes(16).toString('hex'),
    accessKey: sender.accessKey,
    size: 0,
    offset: 0,
    chunks: [],
    expiresAt: nowSeconds(g.clock) + BLOCK_TTL_SECONDS,
    sha1: EMPTY_SHA1,
  };
  await g.meta.sessions.createBlock(block);
  return answer(g, block, 0, 0, EMPTY_SHA1);
}

/** The block a ctx names, if this key may continue it; 701 otherwise. */
async function blockOf(g: Granary, accessKey: string, ctx: string): Promise<{ block: BlockRecord; offset: number }> {
  const p = await decodeCtx(g.meta, ctx, nowSeconds(g.clock));
  const block = await g.meta.sessions.getBlock(p.blockId);
  if (!block || block.accessKey !== accessKey || block.expiresAt <= nowSeconds(g.clock)) throw Errors.invalidCtx();
  return { block, offset: p.offset };
}

/** `POST /bput/<ctx>/<nextChunkOffset>`: appends the chunk that immediately follows `ctx` (631/403 as mkblk). */
export async function putChunk(g: Granary, sender: ChunkSender, ctx: string, nextOffset: number, body: Readable): Promise<BlockAnswer> {
  // Chunks are no object yet: the account here; a sub-user's right on the key when mkfile commits (putObject).
  await authorizeBucket(g, sender.accessKey, sender.bucket, { action: ACCOUNT });
  const { block, offset } = await blockOf(g, sender.accessKey, ctx);
  // The ctx must be the block's latest and the chunk must start where it says.
  if (offset !== nextOffset || block.offset !== offset) throw Errors.invalidCtx();
  if (block.offset >= block.size) throw Errors.badBlock('the block is complete');
  const chunk = await receiveChunk(g, body, block.size - block.offset, sender.declaredBytes);
  const out = await g.meta.sessions.appendChunk(block.id, offset, { blobId: chunk.blobId, size: chunk.size, sums: chunk.sums });
  if (out.result !== 'ok') {
    // Another chunk won the race for this offset (a replay): this one is dropped.
    await g.blobs.remove(chunk.blobId);
    throw Errors.invalidCtx();
  }
  return answer(g, block, out.offset, chunk.crc32, async () => {
    const next = (await g.meta.sessions.getBlock(block.id)) ?? block;
    return sha1OfPieces(g, next.chunks);
  });
}

/**
 * `POST /mkfile/<fileSize>/…` with the comma-joined last ctx of every block: checks the blocks (701 for a bad or
 * stale ctx; 400 for an incomplete block, a non-4 MiB block before the last, a repeated block, or sizes that do not
 * add up to `fileSize`), then commits through putObject. Blocks are deleted once the object exists.
 */
export async function makeFile(
  g: Granary,
  fileSize: number,
  ctxList: string,
  req: PutRequest,
): Promise<PutResult> {
  const ctxs = ctxList.split(',').map((c) => c.trim()).filter((c) => c !== '');
  const blocks: BlockRecord[] = [];
  for (const ctx of ctxs) {
    const { block, offset } = await blockOf(g, req.accessKey, ctx);
    if (offset !== block.offset) throw Errors.invalidCtx();
    if (block.offset !== block.size) throw Errors.badBlock(`block ${blocks.length} is incomplete (${block.offset} of ${block.size} bytes)`);
    if (blocks.some((b) => b.id === block.id)) throw Errors.badBlock(`block ${blocks.length} is listed twice`);
    blocks.push(block);
  }
  blocks.forEach((b, i) => {
    if (i < blocks.length - 1 && b.size !== BLOCK_SIZE) throw Errors.badBlock(`block ${i} is not ${BLOCK_SIZE} bytes`);
  });
  const total = blocks.reduce((n, b) => n + b.size, 0);
  if (!Number.isInteger(fileSize) || fileSize !== total) throw Errors.badBlock(`the blocks hold ${total} bytes, not ${fileSize}`);

  let body;
  try {
    const sha1s: Buffer[] = [];
    // An empty block (mkblk/0, only last) adds no block to the etag; a file of empty blocks only is the empty etag.
    for (const b of blocks) if (b.size > 0) sha1s.push(urlsafeB64Decode(b.sha1 ?? (await sha1OfPieces(g, b.chunks))));
    // A chunk recorded without its size (an earlier version) is its block's only chunk: the block's size.
    const single = new Map(blocks.filter((b) => b.chunks.length === 1).map((b) => [b.chunks[0] as string, b.size]));
    body = await assembledBody(g, {
      pieces: await storedPieces(g, blocks.flatMap((b) => b.chunks), (id) => single.get(id)),
      etag: etagFromBlockDigests(sha1s),
      claim: { kind: 'blocks', ids: blocks.map((b) => b.id) },
      lost: () => Errors.invalidCtx(),
    });
  } catch (err) {
    // A concurrent mkfile of the same blocks (or the expiry sweep) dropped them while they were read: their ctxs
    // are no longer valid, as if this call had come second.
    for (const b of blocks) if (!(await g.meta.sessions.getBlock(b.id))) throw Errors.invalidCtx();
    throw err;
  }
  // The commit consumes the blocks (701 when another mkfile took them first: `lost`).
  const result = await putObject(g, body, { ...req, event: 'mkfile' });
  g.metrics?.upload('mkfile', result.record.fsize);
  return result;
}
