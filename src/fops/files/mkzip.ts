/**
 * `mkzip` (docs/development/kodo-protocol.md §10.9): archives the resources named by URLs into one zip — a
 * persistent command only (pfop, persistentOps), like Kodo's. Parameters: mkzip-params.ts.
 *
 * - URLs on this server naming entries of the source's bucket are read from storage (private buckets too);
 *   other URLs go through the outbound guard (files/resource-stream.ts). Entries are written one at a time, in
 *   order; the next `LOOKAHEAD` resources are opened meanwhile (at most that many open at once), and those of at
 *   most WHOLE_MAX bytes are also read whole (one verified read for a stored entry) and sampled (stored or
 *   deflated, zip-writer.ts) while earlier entries are written; yazl then deflates up to 8 of them in the threadpool
 *   while it writes the ones before, so small files keep both cores busy.
 * - The archive is written as it is built (zip-writer.ts, yazl: deflate, or store for bytes that do not compress;
 *   ZIP64 when large) into a temp file of the run, which the job then streams through `putObject`: memory stays
 *   bounded whatever the sizes (about (LOOKAHEAD + 8) × 2 × WHOLE_MAX bytes of entries at once, never a larger
 *   entry whole).
 * - A URL that cannot be read (404, refused, origin failure) is left out and listed in an `error.txt` entry
 *   at the end of the archive (`<url>\t<name>\t<status> <message>` per line); when no URL could be read the
 *   command fails with the first failure's status. Kodo's own handling of a missing URL is not documented.
 * - Limits: GRANARY_MKZIP_MAX_FILES URLs (400), GRANARY_MKZIP_MAX_BYTES source bytes in total (400, the command
 *   fails), GRANARY_JOB_TIMEOUT (the run's signal: it destroys the archive's output, which ends the read of the
 *   entry being streamed, and the whole reads ahead, so a stalled origin cannot keep the pool slot past the time
 *   limit), GRANARY_MAX_OBJECT_SIZE for the archive (putObject, 413).
 *   Runs in the `video` pool (long-running work, GRANARY_VIDEO_CONCURRENCY slots).
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Errors, isKodoError, KodoError } from '../../errors.js';
import type { FopCommand, FopContext } from '../types.js';
import { checkName, parseIndexFile, parseMkzip, type MkzipParams, type ZipItem } from './mkzip-params.js';
import { fitsGbk, prepareEntry, ZipWriter, type PreparedEntry } from './zip-writer.js';

/** The name of the entry listing the URLs that could not be read. */
export const ERROR_LIST_NAME = 'error.txt';

/** Resources opened ahead of the one being archived. */
const LOOKAHEAD = 8;

/**
 * Resources of at most this many bytes (their size known when opened) are read whole and prepared (stored or
 * deflated, decided on a sample) while they wait their turn; larger ones stream through when their turn comes.
 */
const WHOLE_MAX = 256 * 1024;

/** A resource opened ahead: its entry prepared whole, or its stream; a failure to open; or a failure to read. */
type Opened =
  | { name: string; mtime: Date; size?: number; entry: PreparedEntry; stream?: undefined }
  | { name: string; mtime: Date; size?: number; stream: Readable; entry?: undefined }
  | { err: unknown; fatal: boolean };

interface Failure {
  item: ZipItem;
  err: KodoError;
}

/**
 * Reads `stream` to its end into one buffer; more than `max` bytes → 478 (an origin sending more than it said).
 * `signal` (the run's time limit) destroys the stream, so a stalled origin does not keep it open.
 */
async function readWhole(stream: Readable, max: number, url: string, signal: AbortSignal): Promise<Buffer> {
  const onAbort = (): void => void stream.destroy(Errors.fopFailed('mkzip: processing timed out'));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const chunk of stream) {
      n += (chunk as Buffer).length;
      if (n > max) throw Errors.originFailed(`${url}: the body is longer than its Content-Length`);
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks, n);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Writes `items` into a zip at a temp file of the run; resolves with its path and size. */
async function buildZip(items: ZipItem[], p: MkzipParams, ctx: FopContext): Promise<{ file: string; size: number }> {
  const open = ctx.openResource;
  if (!open) throw Errors.internal('mkzip: no resource reader in this context');
  const file = ctx.tempFile('.zip');
  const writer = new ZipWriter(p.encoding);
  const written = pipeline(writer.output, createWriteStream(file));
  written.catch(() => undefined);
  const onAbort = (): void => void writer.output.destroy(Errors.fopFailed('mkzip: processing timed out'));
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  const failures: Failure[] = [];
  const ahead = new Map<number, Promise<Opened>>();
  const max = ctx.limits.mkzipMaxBytes;
  const tooMuch = (): Error => Errors.badRequest(`mkzip: the sources exceed ${max} bytes in total (GRANARY_MKZIP_MAX_BYTES)`);
  // Opens item `i`; a small one is also read and prepared here, while earlier entries are written. A failure to
  // open lists the URL in error.txt; a failure while reading fails the archive (as it would mid-stream).
  const openItem = async (item: ZipItem): Promise<Opened> => {
    let res;
    try {
      res = await open(item.url, max, { wholeMax: WHOLE_MAX });
    } catch (err) {
      return { err, fatal: false };
    }
    try {
      const name = item.alias ?? (res.key !== undefined ? checkName(res.key) : item.fallbackName);
      const base = { name, mtime: res.mtime, ...(res.size !== undefined ? { size: res.size } : {}) };
      if (res.read) return { ...base, entry: prepareEntry(await res.read()) };
      if (res.size !== undefined && res.size <= WHOLE_MAX) return { ...base, entry: prepareEntry(await readWhole(res.stream, res.size, item.url, ctx.signal)) };
      return { ...base, stream: res.stream };
    } catch (err) {
      res.stream?.destroy();
      return { err, fatal: true };
    }
  };
  let total = 0;
  let added = 0;
  try {
    for (const [i, item] of items.entries()) {
      ctx.signal.throwIfAborted();
      // The next few resources are opened (small ones read and sampled) while this one is written.
      for (let k = i; k < Math.min(i + LOOKAHEAD, items.length); k++) {
        if (!ahead.has(k)) ahead.set(k, openItem(items[k]!));
      }
      const opened = await ahead.get(i)!;
      ahead.delete(i);
      if ('err' in opened) {
        if (opened.fatal || !isKodoError(opened.err)) throw opened.err;
        if (isKodoError(opened.err, 'originTooLarge')) throw tooMuch();
        failures.push({ item, err: opened.err });
        continue;
      }
      if (opened.size !== undefined && total + opened.size > max) {
        opened.stream?.destroy();
        throw tooMuch();
      }
      total += await writer.add(opened.name, opened.entry ?? opened.stream, opened.mtime);
      if (total > max) throw tooMuch();
      added++;
    }
    if (added === 0) {
      const first = failures[0]!.err;
      throw new KodoError(first.kind, first.status, `mkzip: no url could be read; the first: ${first.message}`);
    }
    if (failures.length > 0) {
      const list = failures.map((f) => `${f.item.url}\t${f.item.alias ?? f.item.fallbackName}\t${f.err.status} ${f.err.message}\n`).join('');
      await writer.add(ERROR_LIST_NAME, prepareEntry(Buffer.from(list)), new Date());
    }
    await writer.end();
    await written;
  } catch (err) {
    writer.output.destroy();
    await written.catch(() => undefined);
    if (ctx.signal.aborted && !isKodoError(err)) throw Errors.fopFailed('mkzip: processing timed out');
    throw isKodoError(err) ? err : Errors.fopFailed(`mkzip: ${(err as Error).message}`);
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    // Resources opened ahead and not archived (a failure stopped the run): close them.
    for (const pending of ahead.values()) void pending.then((o) => ('stream' in o ? o.stream?.destroy() : undefined));
  }
  return { file, size: (await stat(file)).size };
}

export const mkzip: FopCommand<MkzipParams> = {
  name: 'mkzip',
  pool: 'video',
  persistentOnly: true,
  parse: parseMkzip,
  async run(source, p, ctx) {
    const items = p.mode === 2 ? p.items : parseIndexFile(await source.bytes(), ctx.limits.mkzipMaxFiles);
    if (items.length > ctx.limits.mkzipMaxFiles) {
      throw Errors.badRequest(`mkzip: more than ${ctx.limits.mkzipMaxFiles} urls (GRANARY_MKZIP_MAX_FILES)`);
    }
    if (p.encoding === 'gbk') {
      const bad = items.find((i) => !fitsGbk(i.alias ?? i.fallbackName));
      if (bad) throw Errors.badRequest(`mkzip: entry name ${JSON.stringify(bad.alias ?? bad.fallbackName)} cannot be written in GBK`);
    }
    const { file, size } = await buildZip(items, p, ctx);
    return { file, size, contentType: 'application/zip' };
  },
};
