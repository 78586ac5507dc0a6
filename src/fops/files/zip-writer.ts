/**
 * The zip archive writer of `mkzip` (docs/development/kodo-protocol.md §10.9): entries are written into one
 * output stream as they are added, so no archive is ever held in memory whole, and an entry only when the caller
 * hands it over whole (`prepareEntry`, meant for small ones); a stream entry passes through in chunks.
 *
 * Layout (APPNOTE 6.3; the records yazl, its predecessor here, wrote): per entry a local file header and the data,
 * deflated (method 8) or stored (method 0); a whole entry's header carries its CRC-32 and sizes, a stream entry's
 * come after its data in a data descriptor (general purpose bit 3). Then the central directory (with Info-ZIP's
 * extended timestamp, `UT`, per entry) and the end record. ZIP64: an entry whose sizes or offset pass 0xfffffffe
 * gets the ZIP64 extra field in the central directory (and, when its sizes do, a 24-byte data descriptor), and the
 * archive gets the ZIP64 end records once it holds 65,535 entries or more or its central directory starts or ends
 * past 4 GiB.
 *
 * Stored or deflated (`worthDeflating`): a sample of the entry (three 4 KiB windows inside it, not its first bytes,
 * which in a photo or a video are metadata that compresses when the rest does not) decides whether deflate is
 * tried at all; bytes that look compressed or random (photos, video, archives) are stored at once, which saves the
 * CPU deflate would spend on them for nothing. A whole entry that is deflated is stored all the same when deflate
 * did not make it smaller (as Info-ZIP `zip` does). A stream entry is decided on its first STREAM_HEAD bytes, read
 * before its local header (which names the method) is written.
 *
 * Output: pieces are gathered into batches of BATCH_BYTES before they are handed to `output` (fewer, larger file
 * writes); `add` waits while the reader of `output` is behind.
 *
 * Names: UTF-8 with the language-encoding flag (general purpose bit 11), or, for `encoding/gbk`, GBK bytes
 * without that flag (what the built-in unzip of Chinese Windows expects).
 */
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { crc32 } from '@node-rs/crc32';
import iconv from 'iconv-lite';

/** How entry names are written: UTF-8 (flag set) or GBK bytes (flag clear). */
export type ZipNameEncoding = 'utf-8' | 'gbk';

const deflateRaw = promisify(zlib.deflateRaw);

/** The deflate level of the archive's entries (zlib's and Info-ZIP's default). */
const LEVEL = 6;
/** Bytes of each of the three windows sampled to decide whether an entry is worth deflating. */
const PROBE_WINDOW = 4 * 1024;
/** Entries shorter than this are deflated without a look at a sample (the look would cost about as much). */
const PROBE_MIN = 2 * 1024;
/**
 * Bytes a stream entry is read ahead before its method is chosen (its local header is written before its data);
 * an entry that ends within them is handled as a whole one.
 */
export const STREAM_HEAD = 256 * 1024;

const METHOD_STORE = 0;
const METHOD_DEFLATE = 8;
const FILE_NAME_IS_UTF8 = 1 << 11;
const DATA_DESCRIPTOR_FOLLOWS = 1 << 3;
/** 3 = Unix, 63 = APPNOTE 6.3. */
const VERSION_MADE_BY = (3 << 8) | 63;
const VERSION_NEEDED = 20;
const VERSION_NEEDED_ZIP64 = 45;
/** Unix mode of every entry: a regular file, rw-rw-r--. */
const EXTERNAL_ATTRIBUTES = (0o100664 << 16) >>> 0;
const MAX_32 = 0xfffffffe;
/** Bytes gathered before they are handed to the output (`ZipWriter.write`). */
const BATCH_BYTES = 512 * 1024;

/** An entry's bytes made ready to write: CRC-32, sizes and the bytes as they go into the archive. */
export interface PreparedEntry {
  crc32: number;
  /** Uncompressed size, bytes. */
  size: number;
  /** 0 stored, 8 deflated. */
  method: number;
  /** The bytes as written (deflated or not). */
  data: Buffer;
}

/** Byte counts of a probe sample, four interleaved tables (independent increments run faster). */
const histogram = new Uint32Array(4 * 256);

/** Order-0 entropy of `b` in bits per byte (0–8): what Huffman coding alone could bring each byte down to. */
function entropyBits(b: Buffer): number {
  const h = histogram;
  h.fill(0);
  const n = b.length;
  const m = n & ~3;
  for (let i = 0; i < m; i += 4) {
    h[b[i]!]!++;
    h[256 + b[i + 1]!]!++;
    h[512 + b[i + 2]!]!++;
    h[768 + b[i + 3]!]!++;
  }
  for (let i = m; i < n; i++) h[b[i]!]!++;
  let sum = 0;
  for (let i = 0; i < 256; i++) {
    const c = h[i]! + h[256 + i]! + h[512 + i]! + h[768 + i]!;
    if (c > 0) sum += c * Math.log2(c);
  }
  return Math.log2(n) - sum / n;
}

/**
 * Whether deflating `data` (an entry, or the head of a stream entry) looks worth it, judged on a sample: three
 * windows of PROBE_WINDOW bytes at 1/4, 1/2 and 3/4 of it (all of it when shorter). Not the first bytes: the
 * metadata at the start of a photo or a video (EXIF, an MP4 `moov`) compresses well when the rest does not.
 * The sample's byte entropy decides the clear cases (≥ 7.9 bits per byte: compressed or random bytes, stored;
 * < 6: text and the like, deflated); in between, the sample deflated at level 1 must shrink by 1/32.
 */
export function worthDeflating(data: Buffer): boolean {
  if (data.length < PROBE_MIN) return true;
  let sample = data;
  if (data.length > 3 * PROBE_WINDOW) {
    const at = (f: number): Buffer => {
      const start = Math.min(Math.floor(data.length * f), data.length - PROBE_WINDOW);
      return data.subarray(start, start + PROBE_WINDOW);
    };
    sample = Buffer.concat([at(0.25), at(0.5), at(0.75)], 3 * PROBE_WINDOW);
  }
  const bits = entropyBits(sample);
  if (bits >= 7.9) return false;
  if (bits < 6) return true;
  return zlib.deflateRawSync(sample, { level: 1 }).length < sample.length - (sample.length >> 5);
}

/**
 * Prepares a whole entry held in memory (`data`, any size that fits in memory; mkzip passes at most 256 KiB): its
 * CRC-32 and its bytes as they will be written — deflated at level 6 (in the libuv threadpool), or stored when
 * `worthDeflating` says no or deflate did not shrink them. Independent of any archive: callers prepare a few
 * entries ahead while others are written. Never rejects for a Buffer.
 */
export async function prepareEntry(data: Buffer): Promise<PreparedEntry> {
  const crc = crc32(data) >>> 0;
  if (data.length > 0 && worthDeflating(data)) {
    const deflated = await deflateRaw(data, { level: LEVEL });
    if (deflated.length < data.length) return { crc32: crc, size: data.length, method: METHOD_DEFLATE, data: deflated };
  }
  return { crc32: crc, size: data.length, method: METHOD_STORE, data };
}

/** What the central directory needs of a written entry. */
interface WrittenEntry {
  name: Buffer;
  utf8: boolean;
  method: number;
  descriptor: boolean;
  dosTime: number;
  dosDate: number;
  unixTime: number;
  crc32: number;
  size: number;
  compressedSize: number;
  offset: number;
}

/** DOS date and time of `d` in local time (as yazl and Info-ZIP), clamped to 1980–2107. */
function dosDateTime(d: Date): { date: number; time: number } {
  const min = new Date(1980, 0, 1);
  const max = new Date(2107, 11, 31, 23, 59, 58);
  const t = d < min ? min : d > max ? max : d;
  return {
    date: (t.getDate() & 0x1f) | (((t.getMonth() + 1) & 0xf) << 5) | (((t.getFullYear() - 1980) & 0x7f) << 9),
    time: Math.floor(t.getSeconds() / 2) | ((t.getMinutes() & 0x3f) << 5) | ((t.getHours() & 0x1f) << 11),
  };
}

function writeUInt64LE(buf: Buffer, n: number, offset: number): void {
  buf.writeUInt32LE(n % 0x100000000, offset);
  buf.writeUInt32LE(Math.floor(n / 0x100000000), offset + 4);
}

/**
 * A zip archive being written: `add` entries one at a time, then `end()`. `output` carries the archive bytes;
 * destroying it (a time-out, a failed write of the output) makes the pending and later calls reject.
 */
export class ZipWriter {
  /** The archive bytes, produced as entries are added. */
  readonly output: Readable;
  private readonly sink = new PassThrough({ highWaterMark: 1024 * 1024 });
  private readonly entries: WrittenEntry[] = [];
  private offset = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private busy = false;
  private ended = false;
  /** The first failure of an `add` that may have written part of an entry: later calls reject with it. */
  private failure: Error | undefined;

  /** `forceZip64`: ZIP64 records for every entry and the archive whatever their sizes (tests). */
  constructor(
    private readonly encoding: ZipNameEncoding,
    private readonly opts: { forceZip64?: boolean } = {},
  ) {
    this.output = this.sink;
  }

  /**
   * Appends `buf` to the archive: small pieces (headers, small entries) are gathered and handed to the output in
   * batches of about BATCH_BYTES (one file write each rather than one per piece), waiting while the reader is
   * behind. Rejects once the output is destroyed.
   */
  private async write(buf: Buffer): Promise<void> {
    this.offset += buf.length;
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    if (this.pendingBytes >= BATCH_BYTES) await this.flush();
  }

  /** Hands the gathered pieces to the output (see `write`). */
  private async flush(): Promise<void> {
    const out = this.sink;
    if (out.destroyed) throw out.errored ?? new Error('zip: the output was closed');
    if (this.pendingBytes === 0) return;
    const batch = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    if (out.write(batch)) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        out.off('drain', done);
        out.off('close', done);
        resolve();
      };
      out.on('drain', done);
      out.on('close', done);
    });
    if (out.destroyed) throw out.errored ?? new Error('zip: the output was closed');
  }

  private nameBytes(name: string): { bytes: Buffer; utf8: boolean } {
    if (this.encoding === 'gbk') return { bytes: iconv.encode(name, 'gbk'), utf8: false };
    return { bytes: Buffer.from(name), utf8: true };
  }

  /** `name` with `\\` made `/`, encoded; throws (nothing written yet) on an empty, absolute or `..` name. */
  private checkedName(name: string): { bytes: Buffer; utf8: boolean } {
    const n = name.replace(/\\/g, '/');
    if (n === '' || n.endsWith('/') || n.startsWith('/') || /^[a-zA-Z]:/.test(n) || n.split('/').includes('..')) {
      throw new Error(`zip: bad entry name ${JSON.stringify(name)}`);
    }
    const encoded = this.nameBytes(n);
    if (encoded.bytes.length > 0xffff) throw new Error('zip: entry name too long');
    return encoded;
  }

  private begin(name: { bytes: Buffer; utf8: boolean }, mtime: Date, method: number, descriptor: boolean): WrittenEntry {
    const { bytes, utf8 } = name;
    const { date, time } = dosDateTime(mtime);
    const unix = Math.floor(mtime.getTime() / 1000);
    return {
      name: bytes,
      utf8,
      method,
      descriptor,
      dosTime: time,
      dosDate: date,
      unixTime: Math.min(Math.max(unix, -0x80000000), 0x7fffffff),
      crc32: 0,
      size: 0,
      compressedSize: 0,
      offset: this.offset,
    };
  }

  private localHeader(e: WrittenEntry): Buffer {
    const h = Buffer.alloc(30 + e.name.length);
    h.writeUInt32LE(0x04034b50, 0);
    h.writeUInt16LE(VERSION_NEEDED, 4);
    h.writeUInt16LE((e.utf8 ? FILE_NAME_IS_UTF8 : 0) | (e.descriptor ? DATA_DESCRIPTOR_FOLLOWS : 0), 6);
    h.writeUInt16LE(e.method, 8);
    h.writeUInt16LE(e.dosTime, 10);
    h.writeUInt16LE(e.dosDate, 12);
    if (!e.descriptor) {
      h.writeUInt32LE(e.crc32, 14);
      h.writeUInt32LE(e.compressedSize, 18);
      h.writeUInt32LE(e.size, 22);
    }
    h.writeUInt16LE(e.name.length, 26);
    h.writeUInt16LE(0, 28);
    e.name.copy(h, 30);
    return h;
  }

  /** Whether the entry's central directory record needs the ZIP64 extra field. */
  private zip64(e: WrittenEntry): boolean {
    return this.opts.forceZip64 === true || e.size > MAX_32 || e.compressedSize > MAX_32 || e.offset > MAX_32;
  }

  /** The data descriptor of a stream entry: 8-byte sizes when they need them (or `forceZip64`), else 4-byte. */
  private dataDescriptor(e: WrittenEntry): Buffer {
    const zip64 = this.opts.forceZip64 === true || e.size > MAX_32 || e.compressedSize > MAX_32;
    const d = Buffer.alloc(zip64 ? 24 : 16);
    d.writeUInt32LE(0x08074b50, 0);
    d.writeUInt32LE(e.crc32, 4);
    if (zip64) {
      writeUInt64LE(d, e.compressedSize, 8);
      writeUInt64LE(d, e.size, 16);
    } else {
      d.writeUInt32LE(e.compressedSize, 8);
      d.writeUInt32LE(e.size, 12);
    }
    return d;
  }

  private centralRecord(e: WrittenEntry): Buffer {
    const zip64 = this.zip64(e);
    const extra = 9 + (zip64 ? 28 : 0);
    const r = Buffer.alloc(46 + e.name.length + extra);
    r.writeUInt32LE(0x02014b50, 0);
    r.writeUInt16LE(VERSION_MADE_BY, 4);
    r.writeUInt16LE(zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 6);
    r.writeUInt16LE((e.utf8 ? FILE_NAME_IS_UTF8 : 0) | (e.descriptor ? DATA_DESCRIPTOR_FOLLOWS : 0), 8);
    r.writeUInt16LE(e.method, 10);
    r.writeUInt16LE(e.dosTime, 12);
    r.writeUInt16LE(e.dosDate, 14);
    r.writeUInt32LE(e.crc32, 16);
    r.writeUInt32LE(zip64 ? 0xffffffff : e.compressedSize, 20);
    r.writeUInt32LE(zip64 ? 0xffffffff : e.size, 24);
    r.writeUInt16LE(e.name.length, 28);
    r.writeUInt16LE(extra, 30);
    // 32: comment length, 34: disk number, 36: internal attributes: 0.
    r.writeUInt32LE(EXTERNAL_ATTRIBUTES, 38);
    r.writeUInt32LE(zip64 ? 0xffffffff : e.offset, 42);
    let p = 46;
    e.name.copy(r, p);
    p += e.name.length;
    // Info-ZIP extended timestamp: mtime (the atime flag set without its field, as Info-ZIP does in the central directory).
    r.writeUInt16LE(0x5455, p);
    r.writeUInt16LE(5, p + 2);
    r.writeUInt8(0b11, p + 4);
    r.writeInt32LE(e.unixTime, p + 5);
    p += 9;
    if (zip64) {
      r.writeUInt16LE(0x0001, p);
      r.writeUInt16LE(24, p + 2);
      writeUInt64LE(r, e.size, p + 4);
      writeUInt64LE(r, e.compressedSize, p + 12);
      writeUInt64LE(r, e.offset, p + 20);
    }
    return r;
  }

  /**
   * Adds an entry named `name` (checked again: no empty, absolute or `..` name) with modification time `mtime`:
   * `data` prepared whole (`prepareEntry`), or a stream read to its end (deflated or stored as its first
   * STREAM_HEAD bytes decide; see the module comment). Entries are added one at a time (an `add` before
   * the previous one resolved throws). Resolves with the entry's uncompressed size, bytes, once its bytes are in the
   * output. A failing stream, a bad name or a destroyed output rejects: the archive is then unusable.
   */
  async add(name: string, data: PreparedEntry | Readable, mtime: Date): Promise<number> {
    if (this.failure) throw this.failure;
    if (this.sink.destroyed) throw this.sink.errored ?? new Error('zip: the output was closed');
    if (this.ended) throw new Error('zip: entry added after end()');
    if (this.busy) throw new Error('zip: entries must be added one at a time');
    const entryName = this.checkedName(name);
    this.busy = true;
    try {
      const prepared = data as PreparedEntry;
      if (Buffer.isBuffer(prepared.data) && typeof prepared.crc32 === 'number') return await this.addPrepared(entryName, prepared, mtime);
      return await this.addStream(entryName, data as Readable, mtime);
    } catch (err) {
      // Part of the entry may be in the output already: nothing more can be added.
      this.failure ??= err as Error;
      throw err;
    } finally {
      this.busy = false;
    }
  }

  private async addPrepared(name: { bytes: Buffer; utf8: boolean }, p: PreparedEntry, mtime: Date): Promise<number> {
    const e = this.begin(name, mtime, p.method, false);
    e.crc32 = p.crc32;
    e.size = p.size;
    e.compressedSize = p.data.length;
    await this.write(this.localHeader(e));
    await this.write(p.data);
    this.entries.push(e);
    return e.size;
  }

  private async addStream(name: { bytes: Buffer; utf8: boolean }, stream: Readable, mtime: Date): Promise<number> {
    // Destroying the output (a time-out) also ends a read that waits on a stalled source.
    const onClose = (): void => void stream.destroy(this.sink.errored ?? new Error('zip: the output was closed'));
    this.sink.once('close', onClose);
    const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    try {
      // The head decides the method; an entry that ends within it is written whole.
      const head: Buffer[] = [];
      let headBytes = 0;
      let ended = false;
      while (headBytes < STREAM_HEAD) {
        const r = await it.next();
        if (r.done) {
          ended = true;
          break;
        }
        head.push(r.value);
        headBytes += r.value.length;
      }
      const first = Buffer.concat(head, headBytes);
      if (ended) return await this.addPrepared(name, await prepareEntry(first), mtime);
      const deflate = worthDeflating(first);
      const e = this.begin(name, mtime, deflate ? METHOD_DEFLATE : METHOD_STORE, true);
      await this.write(this.localHeader(e));
      let crc = 0;
      let size = 0;
      let compressed = 0;
      async function* source(): AsyncGenerator<Buffer> {
        for (let chunk: Buffer | undefined = first; chunk !== undefined; ) {
          crc = crc32(chunk, crc);
          size += chunk.length;
          yield chunk;
          const r = await it.next();
          chunk = r.done ? undefined : r.value;
        }
      }
      const sink = async (chunks: AsyncIterable<Buffer>): Promise<void> => {
        for await (const c of chunks) {
          compressed += c.length;
          await this.write(c);
        }
      };
      if (deflate) await pipeline(source, zlib.createDeflateRaw({ level: LEVEL }), sink);
      else await pipeline(source, sink);
      e.crc32 = crc >>> 0;
      e.size = size;
      e.compressedSize = compressed;
      await this.write(this.dataDescriptor(e));
      this.entries.push(e);
      return size;
    } finally {
      this.sink.off('close', onClose);
      // Closes the stream when it was not read to its end (a failure on either side).
      await it.return?.();
    }
  }

  /** Writes the central directory and the end records; the output ends after them. */
  async end(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.busy) throw new Error('zip: end() while an entry is being added');
    this.ended = true;
    const start = this.offset;
    for (const e of this.entries) await this.write(this.centralRecord(e));
    const size = this.offset - start;
    const count = this.entries.length;
    const force = this.opts.forceZip64 === true;
    const manyEntries = force || count >= 0xffff;
    const bigSize = force || size >= 0xffffffff;
    const farStart = force || start >= 0xffffffff;
    const zip64 = manyEntries || bigSize || farStart;
    const records: Buffer[] = [];
    if (zip64) {
      const rec = Buffer.alloc(56);
      rec.writeUInt32LE(0x06064b50, 0);
      writeUInt64LE(rec, 56 - 12, 4);
      rec.writeUInt16LE(VERSION_MADE_BY, 12);
      rec.writeUInt16LE(VERSION_NEEDED_ZIP64, 14);
      // 16: this disk, 20: the disk of the central directory: 0.
      writeUInt64LE(rec, count, 24);
      writeUInt64LE(rec, count, 32);
      writeUInt64LE(rec, size, 40);
      writeUInt64LE(rec, start, 48);
      const locator = Buffer.alloc(20);
      locator.writeUInt32LE(0x07064b50, 0);
      writeUInt64LE(locator, this.offset, 8);
      locator.writeUInt32LE(1, 16);
      records.push(rec, locator);
    }
    const eocd = Buffer.alloc(22);
    eocd.writeUInt32LE(0x06054b50, 0);
    eocd.writeUInt16LE(manyEntries ? 0xffff : count, 8);
    eocd.writeUInt16LE(manyEntries ? 0xffff : count, 10);
    eocd.writeUInt32LE(bigSize ? 0xffffffff : size, 12);
    eocd.writeUInt32LE(farStart ? 0xffffffff : start, 16);
    records.push(eocd);
    for (const r of records) await this.write(r);
    await this.flush();
    this.sink.end();
  }
}

/** Whether `name` can be written as GBK without loss (`encoding/gbk`; a name that cannot is a 400 in mkzip). */
export function fitsGbk(name: string): boolean {
  return iconv.decode(iconv.encode(name, 'gbk'), 'gbk') === name;
}
