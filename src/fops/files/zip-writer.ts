/**
 * The zip archive writer of `mkzip` (docs/development/kodo-protocol.md §10.9), on top of yazl: yazl writes the
 * records (local headers, data descriptors, the central directory with Info-ZIP's `UT` timestamp, ZIP64 records as
 * soon as an entry or the archive passes 4 GiB or 65,535 entries) into one output stream as entries are added, in
 * the order they were added, so no archive is ever held in memory whole. What is ours is small: which entries are
 * stored rather than deflated, the bound on what is queued, and GBK names.
 *
 * Stored or deflated (`worthDeflating`): a sample of the entry (three 4 KiB windows inside it, not its first bytes,
 * which in a photo or a video are metadata that compresses when the rest does not) decides whether it is deflated
 * at all; bytes that look compressed or random (photos, video, archives) are stored (yazl's `compress: false`),
 * which saves the CPU deflate would spend on them for nothing. A stream entry is decided on its first STREAM_HEAD
 * bytes, read before it is handed to yazl (its local header names the method).
 *
 * Whole entries (`prepareEntry`, a Buffer: mkzip's small files) go to yazl's `addBuffer`, which computes their
 * CRC-32 (in JavaScript, buffer-crc32, on the event loop) and deflates them in the libuv threadpool at once; `add`
 * returns while up to QUEUED of them wait to be written, so the next entries are deflated while earlier ones are
 * written and both cores stay busy. A stream entry is piped through when its turn comes; `add` resolves once it is
 * written. `add` also waits while the reader of `output` is behind.
 *
 * Reaching into yazl (pinned at ~3.3.1; the unit tests read its archives back with Info-ZIP and Python): an entry
 * is written when yazl asks it for its data descriptor (`getDataDescriptor`, wrapped per entry: yazl has no
 * per-entry event), and GBK names (below) are swapped in its header writers.
 *
 * Names: UTF-8 with the language-encoding flag (general purpose bit 11), or, for `encoding/gbk`, raw GBK bytes
 * without that flag (what the built-in unzip of Chinese Windows expects). yazl writes only UTF-8 names, so a GBK
 * name is handed to it as a marker (`\u0001gbk:` + hex of the bytes) and swapped for the bytes, with bit 11
 * cleared, when its headers are written (`installRawNames`, once per process).
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import iconv from 'iconv-lite';
import yazl from 'yazl';

/** How entry names are written: UTF-8 (flag set) or GBK bytes (flag clear). */
export type ZipNameEncoding = 'utf-8' | 'gbk';

/** Bytes of each of the three windows sampled to decide whether an entry is worth deflating. */
const PROBE_WINDOW = 4 * 1024;
/** Entries shorter than this are deflated without a look at a sample (the look would cost about as much). */
const PROBE_MIN = 2 * 1024;
/**
 * Bytes a stream entry is read ahead before its method is chosen (its local header is written before its data);
 * an entry that ends within them is handled as a whole one.
 */
export const STREAM_HEAD = 256 * 1024;
/** Whole entries handed to yazl and not yet written before `add` waits (each holds its bytes, and deflated, its output). */
export const QUEUED = 8;
/**
 * Bytes written by yazl and not yet taken by the reader of `output` before `add` waits for them to be taken. yazl's
 * output has Node's default 16 KiB buffer and writes past it; waiting at that mark would leave the file write and
 * the compression taking turns.
 */
const OUTPUT_BEHIND = 1024 * 1024;

const MARKER = '\u0001gbk:';
const MARKER_BYTES = Buffer.from(MARKER);
const FILE_NAME_IS_UTF8 = 1 << 11;

/** An entry's bytes held whole, and whether they are to be deflated (`prepareEntry`). */
export interface PreparedEntry {
  data: Buffer;
  compress: boolean;
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
 * A whole entry held in memory (mkzip passes at most 256 KiB) with its method decided (`worthDeflating`; an empty
 * one is stored). Cheap (a sample is looked at), independent of any archive: mkzip prepares entries ahead.
 */
export function prepareEntry(data: Buffer): PreparedEntry {
  return { data, compress: data.length > 0 && worthDeflating(data) };
}

/** What this module uses of yazl's (private) entry objects. */
interface YazlEntry {
  utf8FileName: Buffer;
  /** Entry.FILE_DATA_DONE (3) once its data and data descriptor are in the output. */
  state: number;
  uncompressedSize: number | null;
  getLocalFileHeader(): Buffer;
  getCentralDirectoryRecord(): Buffer;
  getDataDescriptor(): Buffer;
}

let installed = false;

/** Swaps a marker name for its raw bytes (once per entry). True when the entry has a raw name. */
function swapRawName(entry: YazlEntry & { rawName?: boolean }): boolean {
  if (entry.rawName) return true;
  const name = entry.utf8FileName;
  if (name.length < MARKER_BYTES.length || !name.subarray(0, MARKER_BYTES.length).equals(MARKER_BYTES)) return false;
  entry.utf8FileName = Buffer.from(name.subarray(MARKER_BYTES.length).toString('latin1'), 'hex');
  entry.rawName = true;
  return true;
}

/** Wraps yazl's header writers once so that marker names become raw bytes with bit 11 clear. */
function installRawNames(): void {
  if (installed) return;
  installed = true;
  const probe = new yazl.ZipFile();
  probe.addBuffer(Buffer.alloc(0), 'probe');
  const proto = Object.getPrototypeOf((probe as unknown as { entries: YazlEntry[] }).entries[0]) as YazlEntry;
  const local = proto.getLocalFileHeader;
  const central = proto.getCentralDirectoryRecord;
  proto.getLocalFileHeader = function (this: YazlEntry): Buffer {
    const raw = swapRawName(this);
    const out = local.call(this);
    if (raw) out.writeUInt16LE(out.readUInt16LE(6) & ~FILE_NAME_IS_UTF8, 6);
    return out;
  };
  proto.getCentralDirectoryRecord = function (this: YazlEntry): Buffer {
    const raw = swapRawName(this);
    const out = central.call(this);
    if (raw) out.writeUInt16LE(out.readUInt16LE(8) & ~FILE_NAME_IS_UTF8, 8);
    return out;
  };
}

/**
 * A zip archive being written: `add` entries one at a time, then `end()`. `output` carries the archive bytes;
 * destroying it (a time-out, a failed write of the output) makes the pending and later calls reject.
 */
export class ZipWriter {
  private readonly zip = new yazl.ZipFile();
  /** The archive bytes, produced as entries are added. */
  readonly output: Readable;
  /** Whole entries handed to yazl, oldest first: each settles once written (yazl writes in order). */
  private queued: Array<Promise<number>> = [];
  /** The rejections of the entries handed over and not yet written: called when the output closes first. */
  private readonly unwritten = new Set<(err: Error) => void>();
  private busy = false;
  private ended = false;
  /** The first failure (a stream entry, yazl, the output): later calls reject with it. */
  private failure: Error | undefined;

  /** `forceZip64`: ZIP64 records for every entry and the archive whatever their sizes (tests). */
  constructor(
    private readonly encoding: ZipNameEncoding,
    private readonly opts: { forceZip64?: boolean } = {},
  ) {
    if (encoding === 'gbk') installRawNames();
    this.output = this.zip.outputStream as Readable;
    // yazl reports a failure (an entry's size, a stream it reads) on the ZipFile; the archive is then unusable.
    (this.zip as unknown as NodeJS.EventEmitter).on('error', (err: Error) => this.fail(err));
    this.output.once('close', () => {
      for (const reject of this.unwritten) reject(this.closed());
      this.unwritten.clear();
    });
  }

  private fail(err: Error): void {
    this.failure ??= err;
    this.output.destroy(err);
  }

  private closed(): Error {
    return this.failure ?? this.output.errored ?? new Error('zip: the output was closed');
  }

  /** The name as yazl receives it (a marker for GBK names; see the module comment); throws on a bad name. */
  private metadataPath(name: string): string {
    const n = name.replace(/\\/g, '/');
    if (n === '' || n.endsWith('/') || n.startsWith('/') || /^[a-zA-Z]:/.test(n) || n.split('/').includes('..')) {
      throw new Error(`zip: bad entry name ${JSON.stringify(name)}`);
    }
    if (this.encoding === 'utf-8') return n;
    return MARKER + iconv.encode(n, 'gbk').toString('hex');
  }

  /**
   * Hands one entry to yazl (`put` calls addBuffer or addReadStream) and answers a promise of its uncompressed size
   * once yazl has written it, rejected when the output is closed first.
   */
  private handOver(put: () => void): Promise<number> {
    const entries = (this.zip as unknown as { entries: YazlEntry[] }).entries;
    const before = entries.length;
    put();
    const entry = entries[entries.length - 1];
    if (entries.length !== before + 1 || !entry) throw this.closed();
    const out = this.output;
    // A stored whole entry whose turn it is gets written inside addBuffer, before it could be hooked below.
    const DONE = (entry.constructor as unknown as { FILE_DATA_DONE: number }).FILE_DATA_DONE;
    if (entry.state >= DONE) return Promise.resolve(entry.uncompressedSize ?? 0);
    if (out.destroyed) return Promise.reject(this.closed());
    const unwritten = this.unwritten;
    const written = new Promise<number>((resolve, reject) => {
      unwritten.add(reject);
      const descriptor = entry.getDataDescriptor;
      // yazl asks for the data descriptor right after the entry's data is in the output.
      entry.getDataDescriptor = function (this: YazlEntry): Buffer {
        unwritten.delete(reject);
        resolve(this.uncompressedSize ?? 0);
        return descriptor.call(this);
      };
    });
    written.catch(() => undefined);
    return written;
  }

  /** Waits while the reader of `output` is OUTPUT_BEHIND behind (yazl writes without looking at backpressure). */
  private async drained(): Promise<void> {
    const out = this.output as Readable & { writableLength: number };
    if (out.writableLength <= OUTPUT_BEHIND || out.destroyed) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        out.off('drain', done);
        out.off('close', done);
        resolve();
      };
      out.on('drain', done);
      out.on('close', done);
    });
  }

  /**
   * Adds an entry named `name` (no empty, absolute or `..` name) with modification time `mtime`: `data` prepared
   * whole (`prepareEntry`), or a stream read to its end (deflated or stored as its first STREAM_HEAD bytes decide).
   * Entries are added one at a time (an `add` before the previous one resolved throws). Resolves with the entry's
   * uncompressed size, bytes: for a whole entry once it is queued (see the module comment), for a stream once it is
   * written. A failing stream or a destroyed output rejects: the archive is then unusable.
   */
  async add(name: string, data: PreparedEntry | Readable, mtime: Date): Promise<number> {
    if (this.failure) throw this.failure;
    if (this.output.destroyed) throw this.closed();
    if (this.ended) throw new Error('zip: entry added after end()');
    if (this.busy) throw new Error('zip: entries must be added one at a time');
    const path = this.metadataPath(name);
    this.busy = true;
    try {
      if (data instanceof Readable) return await this.addStream(path, data, mtime);
      return await this.addWhole(path, data, mtime);
    } finally {
      this.busy = false;
    }
  }

  private entryOptions(mtime: Date, compress: boolean): yazl.Options {
    return { mtime, compress, ...(this.opts.forceZip64 ? { forceZip64Format: true } : {}) } as yazl.Options;
  }

  private async addWhole(path: string, p: PreparedEntry, mtime: Date): Promise<number> {
    this.queued.push(this.handOver(() => this.zip.addBuffer(p.data, path, this.entryOptions(mtime, p.compress))));
    while (this.queued.length > QUEUED) await this.queued.shift();
    await this.drained();
    if (this.output.destroyed) throw this.closed();
    return p.data.length;
  }

  private async addStream(path: string, stream: Readable, mtime: Date): Promise<number> {
    // Destroying the output (a time-out) also ends a read that waits on a stalled source.
    const onClose = (): void => void stream.destroy(this.closed());
    this.output.once('close', onClose);
    let done = false;
    try {
      const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      // The head decides the method; an entry that ends within it is added whole.
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
      if (ended) {
        done = true;
        return await this.addWhole(path, prepareEntry(first), mtime);
      }
      const compress = worthDeflating(first);
      const rest = Readable.from(
        (async function* () {
          yield first;
          for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
        })(),
        { objectMode: false },
      );
      rest.once('error', (err) => this.fail(err));
      const written = this.handOver(() => this.zip.addReadStream(rest, path, this.entryOptions(mtime, compress)));
      const size = await written;
      done = true;
      // yazl wrote the entries queued before this one first.
      this.queued = [];
      await this.drained();
      return size;
    } catch (err) {
      this.fail(err as Error);
      throw this.failure ?? err;
    } finally {
      this.output.off('close', onClose);
      if (!done) stream.destroy();
    }
  }

  /** Hands yazl the end: it writes the central directory once the entries are written; the output ends after it. */
  async end(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.busy) throw new Error('zip: end() while an entry is being added');
    this.ended = true;
    this.zip.end((this.opts.forceZip64 ? { forceZip64Format: true } : {}) as yazl.EndOptions);
    await Promise.all(this.queued);
  }
}

/** Whether `name` can be written as GBK without loss (`encoding/gbk`; a name that cannot is a 400 in mkzip). */
export function fitsGbk(name: string): boolean {
  return iconv.decode(iconv.encode(name, 'gbk'), 'gbk') === name;
}
