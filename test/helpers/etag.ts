/**
 * An independent Kodo etag ("qetag") for tests, written from protocol.md §7 alone (it deliberately does not share
 * code with src/objects/etag.ts, so a bug there cannot hide in both):
 * - size ≤ 4 MiB: urlsafe_b64(0x16 ‖ SHA1(content));
 * - size > 4 MiB: urlsafe_b64(0x96 ‖ SHA1(SHA1(block_1) ‖ … ‖ SHA1(block_n))), blocks of 4 MiB.
 */
import { createHash } from 'node:crypto';

const BLOCK = 4 * 1024 * 1024;

const sha1 = (data: Buffer): Buffer => createHash('sha1').update(data).digest();
const urlsafe = (data: Buffer): string => data.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

/** The qetag of `content`. */
export function qetag(content: Buffer): string {
  if (content.length <= BLOCK) return urlsafe(Buffer.concat([Buffer.from([0x16]), sha1(content)]));
  const blockHashes: Buffer[] = [];
  for (let off = 0; off < content.length; off += BLOCK) blockHashes.push(sha1(content.subarray(off, off + BLOCK)));
  return urlsafe(Buffer.concat([Buffer.from([0x96]), sha1(Buffer.concat(blockHashes))]));
}
