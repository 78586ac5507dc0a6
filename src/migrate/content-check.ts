/**
 * Verification by etag for `granary migrate --data-dir`: the bytes of every copied object are hashed on
 * their way to the destination and compared with what its entry says (docs/development/kodo-protocol.md §7), so a corrupt source is
 * reported instead of copied silently.
 *
 * `ContentCheck` is a pass-through Transform computing the Kodo etag, MD5, size and the per-block CRC-32 checksums
 * (objects/etag.ts DigestingStream), plus, for an entry whose hash is a v2 multipart etag (0x9e, parts not all
 * 4 MiB), the etag of every part (sizes from the entry's `parts`) so that hash can be recomputed too. Memory is
 * bounded: one SHA-1 state per running block, never a block.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { urlsafeB64Decode } from '../auth/base64.js';
import type { BlobSums } from '../ports/blob.js';
import type { ObjectRecord } from '../ports/meta.js';
import { DigestingStream, etagV2, type Digests } from '../objects/etag.js';

/** First byte of a v2 multipart etag whose parts are not all 4 MiB. */
const V2_PREFIX = 0x9e;

/** Whether `hash` is a v2 multipart etag (0x9e ‖ SHA-1, docs/development/kodo-protocol.md §7). */
function isV2Etag(hash: string): boolean {
  try {
    const raw = urlsafeB64Decode(hash);
    return raw.length === 21 && raw[0] === V2_PREFIX;
  } catch {
    return false;
  }
}

/** Digests the bytes of each part separately: etags of parts of the given `sizes` (bytes), in order. */
class PartEtags {
  private current = new DigestingStream();
  private fill = 0;
  private index = 0;
  private readonly etags: Promise<string>[] = [];

  constructor(private readonly sizes: readonly number[]) {
    this.current.resume();
  }

  /** Feeds the next bytes of the whole object. */
  update(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      const size = this.sizes[this.index];
      // Bytes past the declared parts: the size check reports them; they only go to the last digest.
      const take = size === undefined ? chunk.length - off : Math.min(size - this.fill, chunk.length - off);
      this.current.write(chunk.subarray(off, off + take));
      this.fill += take;
      off += take;
      if (size !== undefined && this.fill === size) this.nextPart();
    }
  }

  private nextPart(): void {
    this.etags.push(finish(this.current));
    this.current = new DigestingStream();
    this.current.resume();
    this.fill = 0;
    this.index++;
  }

  /** The v2 etag of the parts (call once every byte was fed). */
  async etag(): Promise<string> {
    if (this.fill > 0 || this.etags.length === 0) this.nextPart();
    return etagV2(await Promise.all(this.etags));
  }
}

/** Ends a DigestingStream and answers its etag. */
function finish(d: DigestingStream): Promise<string> {
  return new Promise((resolve, reject) => {
    d.once('end', () => resolve(d.digests().etag));
    d.once('error', reject);
    d.end();
  });
}

/** What the check found: `sums` are the checksums to record with the destination blob. */
export interface CheckResult {
  size: number;
  etag: string;
  md5: string;
  sums: BlobSums;
  /** Why the bytes do not match the entry (size, etag or MD5), or undefined when they match. */
  mismatch?: string;
}

/**
 * A pass-through stream checking an entry's bytes against its `fsize`, `hash` and (when recorded) `md5`. Read
 * `result()` after the stream has finished.
 */
export class ContentCheck extends Transform {
  private readonly digest = new DigestingStream();
  private readonly parts: PartEtags | undefined;
  private checked: CheckResult | undefined;

  constructor(private readonly entry: Pick<ObjectRecord, 'fsize' | 'hash' | 'md5' | 'parts'>) {
    super();
    this.digest.resume();
    this.parts = isV2Etag(entry.hash) && entry.parts && entry.parts.length > 0 ? new PartEtags(entry.parts) : undefined;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.digest.write(chunk);
    this.parts?.update(chunk);
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    this.digest.once('end', () => {
      const d = this.digest.digests();
      const etag = this.parts ? this.parts.etag() : Promise.resolve(d.etag);
      etag.then(
        (e) => {
          this.checked = compare(this.entry, d, e);
          cb();
        },
        (err: unknown) => cb(err as Error),
      );
    });
    this.digest.end();
  }

  /** The digests and the verdict; throws if the stream has not finished. */
  result(): CheckResult {
    if (!this.checked) throw new Error('ContentCheck: result() before the stream finished');
    return this.checked;
  }
}

/** Checks whole bytes in memory (inline objects) the same way. */
export async function checkBuffer(entry: Pick<ObjectRecord, 'fsize' | 'hash' | 'md5' | 'parts'>, bytes: Buffer): Promise<CheckResult> {
  const c = new ContentCheck(entry);
  c.resume();
  await new Promise<void>((resolve, reject) => {
    c.once('end', resolve);
    c.once('error', reject);
    c.end(bytes);
  });
  return c.result();
}

function compare(entry: Pick<ObjectRecord, 'fsize' | 'hash' | 'md5'>, d: Digests, etag: string): CheckResult {
  const out: CheckResult = { size: d.size, etag, md5: d.md5, sums: d.sums };
  if (d.size !== entry.fsize) out.mismatch = `${d.size} bytes read, the entry says ${entry.fsize}`;
  else if (etag !== entry.hash) out.mismatch = `etag ${etag} computed, the entry says ${entry.hash}`;
  else if (entry.md5 !== '' && d.md5 !== entry.md5) out.mismatch = `MD5 ${d.md5} computed, the entry says ${entry.md5}`;
  return out;
}
