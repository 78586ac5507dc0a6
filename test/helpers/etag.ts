/**
 * An independent Kodo etag ("qetag") for tests, written from docs/development/kodo-protocol.md §7 alone (it deliberately does not share
 * code with src/objects/etag.ts, so a bug there cannot hide in both):
 * - size ≤ 4 MiB: urlsafe_b64(0x16 ‖ SHA1(content));
 * - size > 4 MiB: urlsafe_b64(0x96 ‖ SHA1(SHA1(block_1) ‖ … ‖ SHA1(block_n))), blocks of 4 MiB;
 * - v2 multipart objects whose parts before the last are not all 4 MiB, or with any part (the last included) over
 *   4 MiB: for each part its qetag (21 raw bytes) without the prefix byte, concatenated:
 *   urlsafe_b64(0x9e ‖ SHA1(tail_1 ‖ … ‖ tail_n)); otherwise the plain qetag. This is the SDKs' rule (go-sdk
 *   storage/etag.go `is4MbParts`, java-sdk util/EtagV2.java `is4MBParts`).
 * The file variants stream the file (never holding more than one 4 MiB block's hash state).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';

const BLOCK = 4 * 1024 * 1024;

const sha1 = (data: Buffer): Buffer => createHash('sha1').update(data).digest();
const urlsafe = (data: Buffer): string => data.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

/** The 21 raw bytes of the qetag of `content` (prefix byte ‖ SHA-1). */
function qetagRaw(content: Buffer): Buffer {
  if (content.length <= BLOCK) return Buffer.concat([Buffer.from([0x16]), sha1(content)]);
  const blockHashes: Buffer[] = [];
  for (let off = 0; off < content.length; off += BLOCK) blockHashes.push(sha1(content.subarray(off, off + BLOCK)));
  return Buffer.concat([Buffer.from([0x96]), sha1(Buffer.concat(blockHashes))]);
}

/** The qetag of `content`. */
export function qetag(content: Buffer): string {
  return urlsafe(qetagRaw(content));
}

/** The etag of an object assembled from multipart `parts` (in order), per §7. */
export function qetagV2(parts: Buffer[]): string {
  const last = parts[parts.length - 1];
  if (parts.slice(0, -1).every((p) => p.length === BLOCK) && (last?.length ?? 0) <= BLOCK) return qetag(Buffer.concat(parts));
  const tails = parts.map((p) => qetagRaw(p).subarray(1));
  return urlsafe(Buffer.concat([Buffer.from([0x9e]), sha1(Buffer.concat(tails))]));
}

/** The raw qetag (21 bytes) of `length` bytes of the file at `path` from `start`, streamed. */
async function qetagRawOfRange(path: string, start: number, length: number): Promise<Buffer> {
  const blockHashes: Buffer[] = [];
  let h = createHash('sha1');
  let inBlock = 0;
  if (length > 0) {
    for await (const chunk of createReadStream(path, { start, end: start + length - 1, highWaterMark: 1024 * 1024 })) {
      let buf = chunk as Buffer;
      while (buf.length > 0) {
        const take = Math.min(buf.length, BLOCK - inBlock);
        h.update(buf.subarray(0, take));
        inBlock += take;
        buf = buf.subarray(take);
        if (inBlock === BLOCK) {
          blockHashes.push(h.digest());
          h = createHash('sha1');
          inBlock = 0;
        }
      }
    }
  }
  if (inBlock > 0 || blockHashes.length === 0) blockHashes.push(h.digest());
  if (length <= BLOCK) return Buffer.concat([Buffer.from([0x16]), blockHashes[0] as Buffer]);
  return Buffer.concat([Buffer.from([0x96]), sha1(Buffer.concat(blockHashes))]);
}

/** The qetag of the file at `path`, streamed. */
export async function qetagOfFile(path: string): Promise<string> {
  return urlsafe(await qetagRawOfRange(path, 0, (await stat(path)).size));
}

/** The etag of the file at `path` uploaded as multipart parts of `partSize` bytes (the last one shorter), per §7. */
export async function qetagV2OfFile(path: string, partSize: number): Promise<string> {
  const size = (await stat(path)).size;
  if (partSize === BLOCK || size <= Math.min(partSize, BLOCK)) return qetagOfFile(path);
  const tails: Buffer[] = [];
  for (let off = 0; off < size; off += partSize) {
    tails.push((await qetagRawOfRange(path, off, Math.min(partSize, size - off))).subarray(1));
  }
  return urlsafe(Buffer.concat([Buffer.from([0x9e]), sha1(Buffer.concat(tails))]));
}
