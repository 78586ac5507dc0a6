/**
 * The derived-result cache: fop results (images and other bytes, never JSON) kept as files under
 * `<dataDir>/fop-cache/`, bounded in total size (GRANARY_FOP_CACHE_SIZE bytes; 0 disables) with LRU eviction.
 *
 * Layout: `<root>/<id[0..2]>/<id>.<base64url(contentType)>` — the file is exactly the result's bytes, so a hit is
 * served by streaming the file. `id` is a hex digest chosen by the caller (cached-run.ts). A result is written to
 * `<root>/tmp/`, fsynced, then renamed into place: a crash never leaves a partial file under a final name, and
 * leftovers in `tmp/` are removed at start. At start the index is rebuilt from the files (oldest modification
 * time first; a hit touches the file's mtime so the order survives a restart) and pruned to the size bound.
 *
 * A port-like module: no HTTP here. Concurrent fills of one id share one computation (`singleFlight`).
 */
import { randomBytes } from 'node:crypto';
import { close as fsClose, createReadStream, open as fsOpen, read as fsRead } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { join } from 'node:path';
import type { Logger } from 'pino';

/**
 * A cache entry being served: results up to SMALL_BYTES are read whole (`body`, one open/read/close like small
 * downloads); larger ones are an open stream of the file (`stream`; destroy it when not sending). Either way the
 * file was opened before this returns, so a concurrent eviction cannot cut the answer short.
 */
export type CacheHit = { size: number; contentType: string } & ({ body: Buffer } | { stream: Readable });

/** What to store: bytes in memory, or a finished file that the cache may move (it must not be used after). */
export type CacheContent = { body: Buffer } | { file: string };

interface Entry {
  size: number;
  contentType: string;
  path: string;
  /** When the file's mtime (the LRU order after a restart) was last set, ms. */
  touchedMs: number;
}

/** Results up to this size are read whole on a hit (like small downloads); larger ones are streamed. */
const SMALL_BYTES = 64 * 1024;
/** A hit refreshes the file's mtime at most this often (ms): enough for the LRU order to survive a restart. */
const TOUCH_INTERVAL_MS = 60_000;

/** Opens `path` read-only (plain callbacks: no FileHandle, the cheapest way through libuv). */
function openFd(path: string): Promise<number> {
  return new Promise((resolve, reject) => fsOpen(path, 'r', (err, fd) => (err ? reject(err) : resolve(fd))));
}

/** Reads `size` bytes at offset 0 of `fd`, then closes it. */
function readWhole(fd: number, size: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const buf = Buffer.allocUnsafe(size);
    fsRead(fd, buf, 0, size, 0, (err, n) => {
      fsClose(fd, () => undefined);
      if (err) return reject(err);
      if (n !== size) return reject(new Error(`fop cache: read ${n} of ${size} bytes`));
      resolve(buf);
    });
  });
}

const ID = /^[0-9a-f]{16,128}$/;
const CONTENT_TYPE = /^[\w.+-]+\/[\w.+-]+(;[\w =.+"-]*)?$/;

const b64 = (s: string): string => Buffer.from(s).toString('base64url');
const unb64 = (s: string): string => Buffer.from(s, 'base64url').toString();

export class FopCache {
  /** Entries in LRU order: the first is the least recently used (Map keeps insertion order). */
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Promise<unknown>>();
  private total = 0;

  private constructor(
    /** The cache directory. */
    readonly root: string,
    /** Size bound in bytes (0 = disabled). */
    readonly maxBytes: number,
    private readonly log?: Logger,
  ) {}

  /**
   * Opens the cache at `root` with a bound of `maxBytes` (0 disables it: nothing is stored and the directory is
   * removed). Rebuilds the index from the files, removes temp leftovers and unreadable names, prunes to the bound.
   */
  static async open(root: string, maxBytes: number, log?: Logger): Promise<FopCache> {
    const cache = new FopCache(root, maxBytes, log);
    if (maxBytes <= 0) {
      await rm(root, { recursive: true, force: true });
      return cache;
    }
    await rm(join(root, 'tmp'), { recursive: true, force: true });
    await mkdir(join(root, 'tmp'), { recursive: true });
    const found: { id: string; entry: Entry; mtimeMs: number }[] = [];
    for (const sub of await readdir(root)) {
      if (sub === 'tmp') continue;
      const dir = join(root, sub);
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        await rm(dir, { force: true }).catch(() => undefined);
        continue;
      }
      // One directory's stats at a time, in parallel (a full 1 GiB cache of thumbnails is ~100k files).
      const entries = await Promise.all(
        names.map(async (name) => {
          const path = join(dir, name);
          const dot = name.indexOf('.');
          const id = dot > 0 ? name.slice(0, dot) : '';
          const contentType = dot > 0 ? unb64(name.slice(dot + 1)) : '';
          const st = await stat(path).catch(() => undefined);
          if (!st?.isFile() || !ID.test(id) || !id.startsWith(sub) || !CONTENT_TYPE.test(contentType)) {
            await rm(path, { recursive: true, force: true }).catch(() => undefined);
            return undefined;
          }
          return { id, entry: { size: st.size, contentType, path, touchedMs: st.mtimeMs }, mtimeMs: st.mtimeMs };
        }),
      );
      for (const e of entries) if (e) found.push(e);
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const f of found) cache.add(f.id, f.entry);
    await cache.evict();
    log?.debug({ entries: cache.entries.size, bytes: cache.total }, 'fop cache opened');
    return cache;
  }

  /** Whether results are stored at all. */
  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** Number of entries and their total size in bytes. */
  stats(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.total };
  }

  /** Whether `id` is cached (no I/O, no LRU touch). */
  has(id: string): boolean {
    return this.entries.has(id);
  }

  /**
   * Opens the entry `id` and marks it most recently used; undefined on a miss (or when its file vanished or cannot
   * be read: the entry is dropped).
   */
  async get(id: string): Promise<CacheHit | undefined> {
    const e = this.entries.get(id);
    if (!e) return undefined;
    let hit: CacheHit;
    try {
      const fd = await openFd(e.path);
      hit =
        e.size <= SMALL_BYTES
          ? { size: e.size, contentType: e.contentType, body: await readWhole(fd, e.size) }
          : { size: e.size, contentType: e.contentType, stream: createReadStream('', { fd, highWaterMark: SMALL_BYTES }) };
    } catch {
      if (this.entries.get(id) === e) this.remove(id);
      return undefined;
    }
    if (this.entries.get(id) === e) {
      this.entries.delete(id);
      this.entries.set(id, e);
    }
    const now = Date.now();
    if (now - e.touchedMs >= TOUCH_INTERVAL_MS) {
      e.touchedMs = now;
      const t = new Date(now);
      utimes(e.path, t, t).catch(() => undefined);
    }
    return hit;
  }

  /**
   * Stores a result under `id` durably (temp file, fsync, rename) and evicts least recently used entries beyond
   * the bound. Returns false (nothing stored) when disabled, when the result alone exceeds the bound, or when
   * writing fails (logged); a `file` content is then where it was.
   */
  async put(id: string, content: CacheContent, contentType: string): Promise<boolean> {
    if (!ID.test(id) || !CONTENT_TYPE.test(contentType)) throw new Error(`fop cache: bad id or content type ${id} ${contentType}`);
    const size = 'body' in content ? content.body.length : (await stat(content.file)).size;
    if (!this.enabled || size > this.maxBytes) return false;
    const tmp = join(this.root, 'tmp', `${randomBytes(8).toString('hex')}.tmp`);
    const dir = join(this.root, id.slice(0, 2));
    const path = join(dir, `${id}.${b64(contentType)}`);
    let moved = false; // the caller's file now lives at `tmp`
    try {
      if ('body' in content) await writeFile(tmp, content.body);
      else {
        await rename(content.file, tmp).then(
          () => void (moved = true),
          async (err: NodeJS.ErrnoException) => {
            if (err.code !== 'EXDEV') throw err;
            await copyFile(content.file, tmp);
          },
        );
      }
      const fh = await open(tmp, 'r+');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await mkdir(dir, { recursive: true });
      await rename(tmp, path);
    } catch (err) {
      // A moved file goes back where the caller expects it (it serves it uncached); anything else is dropped.
      if (moved && 'file' in content) await rename(tmp, content.file).catch(() => unlink(tmp).catch(() => undefined));
      else await unlink(tmp).catch(() => undefined);
      this.log?.warn({ err, id }, 'fop cache: storing a result failed');
      return false;
    }
    const old = this.entries.get(id);
    if (old) this.remove(id, old.path !== path);
    this.add(id, { size, contentType, path, touchedMs: Date.now() });
    await this.evict();
    return true;
  }

  /**
   * Runs `task` once for concurrent callers with the same `id`: callers arriving while it runs get its outcome
   * (value or error).
   */
  singleFlight<T>(id: string, task: () => Promise<T>): Promise<T> {
    const running = this.flights.get(id);
    if (running) return running as Promise<T>;
    const p = task().finally(() => this.flights.delete(id));
    this.flights.set(id, p);
    return p;
  }

  private add(id: string, e: Entry): void {
    this.entries.set(id, e);
    this.total += e.size;
  }

  private remove(id: string, unlinkFile = true): void {
    const e = this.entries.get(id);
    if (!e) return;
    this.entries.delete(id);
    this.total -= e.size;
    if (unlinkFile) unlink(e.path).catch(() => undefined);
  }

  /** Drops least recently used entries until the total fits the bound. */
  private async evict(): Promise<void> {
    for (const [id, e] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(id);
      this.total -= e.size;
      await unlink(e.path).catch(() => undefined);
    }
  }
}
