/**
 * Local copies of remote blobs for readers that need a file path (ffmpeg, ffprobe, heif-convert): the
 * `localFile()` of the S3 BlobStore.
 *
 * Files live in `dir` as `<id>.<random>` (complete copies; a download goes to the same name plus `.part` and is
 * renamed when complete). The total size is bounded by `maxBytes`, least recently used first out. A file handed out is pinned
 * until its `release()`; pinned files are never evicted, so while many are in use the total may exceed the bound
 * (a blob larger than the bound is kept only while pinned). Blobs are immutable, so a copy never goes stale;
 * `forget(id)` drops the copy of a removed blob. Concurrent requests for one id share one download.
 * The index lives in memory: `clear()` (at start) empties the directory.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

interface CachedFile {
  path: string;
  size: number;
  pins: number;
  /** Removed from the index while pinned: delete the file at the last release. */
  orphaned: boolean;
}

export class BlobFileCache {
  /** id → file, in least-recently-used-first order (a Map keeps insertion order; a use re-inserts). */
  private readonly files = new Map<string, CachedFile>();
  private readonly downloads = new Map<string, Promise<CachedFile>>();
  private totalBytes = 0;

  /** `dir`: a directory of its own (emptied by `clear()`); `maxBytes`: bound of the unpinned total, bytes. */
  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
  ) {}

  /** Empties the directory (copies of an earlier run are not indexed) and creates it. */
  async clear(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    this.files.clear();
    this.totalBytes = 0;
  }

  /** Bytes held by the copies now (pinned or not). */
  get bytes(): number {
    return this.totalBytes;
  }

  /**
   * A pinned local file of blob `id`, downloaded with `open()` (a stream of the blob's bytes) when not cached.
   * Errors of `open()` or of the download are passed on (a missing blob stays ENOENT).
   */
  async acquire(id: string, open: () => Readable): Promise<{ path: string; release(): Promise<void> }> {
    let file = this.files.get(id);
    if (file) {
      this.files.delete(id);
      this.files.set(id, file);
    } else {
      let pending = this.downloads.get(id);
      if (!pending) {
        pending = this.download(id, open).finally(() => this.downloads.delete(id));
        this.downloads.set(id, pending);
      }
      file = await pending;
      // Evicted or forgotten between the download's end and this waiter's turn: fetch it again.
      if (file.orphaned) return this.acquire(id, open);
    }
    file.pins++;
    const pinned = file;
    await this.evict();
    let released = false;
    return {
      path: pinned.path,
      release: async () => {
        if (released) return;
        released = true;
        pinned.pins--;
        if (pinned.orphaned && pinned.pins === 0) await unlink(pinned.path).catch(() => undefined);
        else await this.evict();
      },
    };
  }

  /** Drops the copy of `id` (the blob was removed); a pinned copy goes at its last release. */
  async forget(id: string): Promise<void> {
    const file = this.files.get(id);
    if (!file) return;
    this.drop(id, file);
    if (file.pins === 0) await unlink(file.path).catch(() => undefined);
  }

  private drop(id: string, file: CachedFile): void {
    this.files.delete(id);
    this.totalBytes -= file.size;
    file.orphaned = true;
  }

  private async download(id: string, open: () => Readable): Promise<CachedFile> {
    // A fresh name per download: a forgotten copy still pinned never shares its path with a newer one.
    const path = join(this.dir, `${id}.${randomBytes(6).toString('hex')}`);
    const part = `${path}.part`;
    try {
      await mkdir(this.dir, { recursive: true });
      await pipeline(open(), createWriteStream(part, { flags: 'wx' }));
      await rename(part, path);
    } catch (err) {
      await unlink(part).catch(() => undefined);
      throw err;
    }
    const { size } = await stat(path);
    const file: CachedFile = { path, size, pins: 0, orphaned: false };
    this.files.set(id, file);
    this.totalBytes += size;
    return file;
  }

  /** Deletes unpinned copies, least recently used first, until the total is within the bound. */
  private async evict(): Promise<void> {
    for (const [id, file] of this.files) {
      if (this.totalBytes <= this.maxBytes) return;
      if (file.pins > 0) continue;
      this.drop(id, file);
      await unlink(file.path).catch(() => undefined);
    }
  }
}
