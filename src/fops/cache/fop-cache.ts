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
 * Encryption at rest (docs/reference/encryption.md): on a server with a master key every file is written in the
 * encrypted blob format of store/crypto/envelope.ts (its own random data key, wrapped by the master key), so no
 * result derived from an object lies on disk in the clear; a hit decrypts (a file that does not authenticate is
 * dropped as a miss). `<root>/key-id` records the master key id the files are written with ('none' without
 * encryption); a start with another (encryption turned on or off, or after a rotation) empties the cache.
 *
 * A port-like module: no HTTP here. Concurrent fills of one id share one computation (`singleFlight`).
 */
import { randomBytes } from 'node:crypto';
import { close as fsClose, createReadStream, open as fsOpen, read as fsRead } from 'node:fs';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Sealer } from '../../ports/sealer.js';

/**
 * A cache entry being served: results up to SMALL_BYTES are read whole (`body`, one open/read/close like small
 * downloads); larger ones are an open stream of the file (`stream`; destroy it when not sending). Either way the
 * file was opened before this returns, so a concurrent eviction cannot cut the answer short.
 */
export type CacheHit = { size: number; contentType: string } & ({ body: Buffer } | { stream: Readable });

/** What to store: bytes in memory, or a finished file that the cache may move (it must not be used after). */
export type CacheContent = { body: Buffer } | { file: string };

interface Entry {
  /** Bytes of the result (plaintext). */
  size: number;
  /** Bytes of the file (the sealed size when encrypted). */
  stored: number;
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

/** Reads `size` bytes at offset 0 of `fd`, then closes it (`keepOpen`: leaves it open). */
function readWhole(fd: number, size: number, keepOpen = false): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const buf = Buffer.allocUnsafe(size);
    fsRead(fd, buf, 0, size, 0, (err, n) => {
      if (!keepOpen || err) fsClose(fd, () => undefined);
      if (err) return reject(err);
      if (n !== size) return reject(new Error(`fop cache: read ${n} of ${size} bytes`));
      resolve(buf);
    });
  });
}

const ID = /^[0-9a-f]{16,128}$/;
const CONTENT_TYPE = /^[\w.+-]+\/[\w.+-]+(;[\w =.+"-]*)?$/;

/** The file recording the master key id the cache files are encrypted with ('none': in the clear). */
const KEY_ID_FILE = 'key-id';

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
    /** The sealing results are encrypted with (undefined: stored in the clear). */
    private readonly master?: Sealer,
  ) {}

  /**
   * Opens the cache at `root` with a bound of `maxBytes` (0 disables it: nothing is stored and the directory is
   * removed). Rebuilds the index from the files, removes temp leftovers and unreadable names, prunes to the bound.
   * `master`: the sealing of the server's encryption at rest (see the module comment): files written with another
   * key, or in the clear, are removed.
   */
  static async open(root: string, maxBytes: number, log?: Logger, master?: Sealer): Promise<FopCache> {
    const cache = new FopCache(root, maxBytes, log, master);
    if (maxBytes <= 0) {
      await rm(root, { recursive: true, force: true });
      return cache;
    }
    const keyId = master ? master.keyId : 'none';
    const recorded = (await readFile(join(root, KEY_ID_FILE), 'utf8').catch(() => undefined))?.trim();
    // No record: a cache from before encryption existed (in the clear) when there are files; emptied if now encrypted.
    if (recorded !== keyId && (recorded !== undefined || master)) await rm(root, { recursive: true, force: true });
    await rm(join(root, 'tmp'), { recursive: true, force: true });
    await mkdir(join(root, 'tmp'), { recursive: true });
    if (recorded !== keyId) await writeFile(join(root, KEY_ID_FILE), `${keyId}\n`);
    const found: { id: string; entry: Entry; mtimeMs: number }[] = [];
    for (const sub of await readdir(root)) {
      if (sub === 'tmp' || sub === KEY_ID_FILE) continue;
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
          const size = master ? master.plainSize(st.size) : st.size;
          if (size < 0) {
            await rm(path, { force: true }).catch(() => undefined);
            return undefined;
          }
          return { id, entry: { size, stored: st.size, contentType, path, touchedMs: st.mtimeMs }, mtimeMs: st.mtimeMs };
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
      hit = this.master
        ? await this.openSealed(fd, e, this.master)
        : e.size <= SMALL_BYTES
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
   * An encrypted entry opened on `fd` (closed here or by the stream): small ones decrypted whole, larger ones
   * streamed after their header is opened. Throws (CiphertextMismatch) when the file does not authenticate.
   */
  private async openSealed(fd: number, e: Entry, master: Sealer): Promise<CacheHit> {
    if (e.stored <= SMALL_BYTES + master.headerBytes) {
      const body = master.openBuffer(await readWhole(fd, e.stored));
      if (body.length !== e.size) throw new Error(`fop cache: ${e.path} holds ${body.length} bytes, not ${e.size}`);
      return { size: e.size, contentType: e.contentType, body };
    }
    let plain: Transform;
    try {
      plain = master.openStream(await readWhole(fd, master.headerBytes, true));
    } catch (err) {
      fsClose(fd, () => undefined);
      throw err;
    }
    const file = createReadStream('', { fd, start: master.headerBytes, highWaterMark: 4 * SMALL_BYTES });
    return { size: e.size, contentType: e.contentType, stream: pipeline(file, plain, () => undefined) };
  }

  /** Writes `content` to `tmp` encrypted under `master` (a `file` content is left where it is). */
  private async writeSealed(tmp: string, content: CacheContent, master: Sealer): Promise<void> {
    if ('body' in content) await writeFile(tmp, master.sealBuffer(content.body));
    else await pipelineAsync(createReadStream(content.file), master.sealStream(), createWriteStream(tmp));
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
      if (this.master) await this.writeSealed(tmp, content, this.master);
      else if ('body' in content) await writeFile(tmp, content.body);
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
    const stored = this.master ? this.master.sealedSize(size) : size;
    if (this.master && 'file' in content) await unlink(content.file).catch(() => undefined);
    this.add(id, { size, stored, contentType, path, touchedMs: Date.now() });
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
