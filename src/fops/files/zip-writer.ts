/**
 * The zip archive writer of `mkzip` (docs/development/kodo-protocol.md §10.9): yazl streams entries into one
 * output stream as they are added (deflate, data descriptors, ZIP64 records as soon as an entry or the archive
 * passes 4 GiB or 65,535 entries), so no archive or entry is ever held in memory whole.
 *
 * Names: UTF-8 with the language-encoding flag (general purpose bit 11), or, for `encoding/gbk`, raw GBK bytes
 * without that flag (what the built-in unzip of Chinese Windows expects). yazl writes only UTF-8 names, so a GBK
 * name is handed to it as a marker (`\u0001gbk:` + hex of the bytes) and swapped for the bytes, with bit 11
 * cleared, when its headers are written (`installRawNames`, once per process).
 */
import type { Readable } from 'node:stream';
import iconv from 'iconv-lite';
import yazl from 'yazl';

/** How entry names are written: UTF-8 (flag set) or GBK bytes (flag clear). */
export type ZipNameEncoding = 'utf-8' | 'gbk';

const MARKER = '\u0001gbk:';
const MARKER_BYTES = Buffer.from(MARKER);
const FILE_NAME_IS_UTF8 = 1 << 11;

interface YazlEntry {
  utf8FileName: Buffer;
  getLocalFileHeader(): Buffer;
  getCentralDirectoryRecord(): Buffer;
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

/** A zip archive being written: add entries one at a time, then `end()`. `output` carries the archive bytes. */
export class ZipWriter {
  private readonly zip = new yazl.ZipFile();
  /** The archive bytes, produced as entries are added. */
  readonly output: Readable;
  private failure: Error | undefined;

  constructor(private readonly encoding: ZipNameEncoding) {
    if (encoding === 'gbk') installRawNames();
    this.output = this.zip.outputStream as Readable;
    // yazl reports a failing entry stream on the ZipFile; the archive is then unusable.
    (this.zip as unknown as NodeJS.EventEmitter).on('error', (err: Error) => {
      this.failure ??= err;
      this.output.destroy(err);
    });
  }

  /** The name as yazl receives it (a marker for GBK names; see the module comment). */
  private metadataPath(name: string): string {
    if (this.encoding === 'utf-8') return name;
    return MARKER + iconv.encode(name, 'gbk').toString('hex');
  }

  /**
   * Adds an entry whose bytes come from `data` (a Buffer or a stream read to its end); resolves once its bytes
   * have been compressed into the output. A failing stream rejects and destroys the output.
   */
  add(name: string, data: Buffer | Readable, mtime: Date): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      const stream = Buffer.isBuffer(data) ? undefined : data;
      const onError = (err: Error): void => {
        this.failure ??= err;
        this.output.destroy(err);
        reject(err);
      };
      stream?.once('error', onError);
      const done = (): void => {
        stream?.removeListener('error', onError);
        resolve();
      };
      const path = this.metadataPath(name);
      if (Buffer.isBuffer(data)) this.zip.addBuffer(data, path, { mtime, compress: true });
      else this.zip.addReadStream(data, path, { mtime, compress: true });
      // yazl has no per-entry callback: an entry is done when the stream it reads has ended.
      if (stream) stream.once('end', () => setImmediate(done));
      else setImmediate(done);
    });
  }

  /** Writes the central directory; the output ends after it. */
  end(): void {
    this.zip.end();
  }
}

/** Whether `name` can be written as GBK without loss. */
export function fitsGbk(name: string): boolean {
  return iconv.decode(iconv.encode(name, 'gbk'), 'gbk') === name;
}
