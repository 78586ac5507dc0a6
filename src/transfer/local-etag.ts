/**
 * The Kodo etag of local bytes (docs/development/kodo-protocol.md §7), computed incrementally: one SHA-1 per 4 MiB block, folded by
 * `etagFromBlockDigests` of src/objects/etag.ts (the server's own code). Memory: one hash state, never a block.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { BLOCK_SIZE, etagFromBlockDigests } from '../objects/etag.js';

/** Feeds bytes in any slicing; `etag()` once at the end. */
export class EtagHasher {
  private block: Hash = createHash('sha1');
  private fill = 0;
  private readonly digests: Buffer[] = [];
  /** Bytes seen so far. */
  size = 0;

  update(chunk: Buffer): void {
    this.size += chunk.length;
    let off = 0;
    while (off < chunk.length) {
      const take = Math.min(BLOCK_SIZE - this.fill, chunk.length - off);
      this.block.update(chunk.subarray(off, off + take));
      this.fill += take;
      off += take;
      if (this.fill === BLOCK_SIZE) {
        this.digests.push(this.block.digest());
        this.block = createHash('sha1');
        this.fill = 0;
      }
    }
  }

  /** The etag of everything fed (28 characters, `F…` up to 4 MiB, `l…` above). */
  etag(): string {
    const digests = [...this.digests];
    if (this.fill > 0 || digests.length === 0) digests.push(this.block.copy().digest());
    return etagFromBlockDigests(digests);
  }
}

/** The etag of a local file (read as a stream; throws the fs error when unreadable). */
export async function fileEtag(path: string): Promise<string> {
  const h = new EtagHasher();
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) h.update(chunk as Buffer);
  return h.etag();
}

/** True when `hash` is a plain qetag (not a v2 multipart `n…` etag of parts of other sizes, §7). */
export function isQetag(hash: string): boolean {
  return hash.length === 28 && (hash.startsWith('F') || hash.startsWith('l'));
}
