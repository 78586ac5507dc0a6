/**
 * BlobStore on the local disk (the embedded default).
 *
 * Layout under `root`: `tmp/<tag>.<random>.part` while staging, `blobs/<aa>/<bb>/<id>` once sealed, where `id`
 * is 32 random hex characters and `tag` names the process staging it (workers/identity.ts). Names come from
 * random ids only, never from object keys.
 * Sealing = rename the written file into place, then fsync the file and the target directory at the same time:
 * after `seal()` resolves the blob survives a crash or power loss. Renaming before the fsyncs lets one journal
 * commit cover both (fsync, rename, fsync dir took two in a row). A small gain in the bench: +2–7% by the medians
 * of alternating runs (bench/ab.ts), within this VM's noise; the uploads measured there are bound by CPU.
 * A crash between the rename and the end of the fsyncs leaves a blob that no entry references (the commit comes
 * after `seal()`), possibly short: an orphan, reported (never deleted) like any blob sealed by an upload whose commit
 * never came, and removed by `granary gc`. `blobs/deployment.json` is the deployment marker (store/deployment.ts). `recover(liveTags)` removes the staging files of processes that are gone
 * (leftovers of a crash or of a killed worker), never those of a live worker with uploads in flight.
 */
import { randomHexId } from '../../random-id.js';
import { close, createReadStream, createWriteStream, fsync, open as openFd, read, type WriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { BlobStore, ByteRange, StagedBlob } from '../../ports/blob.js';

const ID_RE = /^[0-9a-f]{32}$/;
/** The deployment marker's file name under `blobs/` (store/deployment.ts). */
const MARKER_NAME = 'deployment.json';
/**
 * Read size of blob streams. Larger than Node's 64 KiB default: 8× fewer reads, thread-pool hops and buffers per
 * large download (the 64 KiB default made V8 run full collections back to back under load; see bench/README.md).
 */
const READ_CHUNK_BYTES = 512 * 1024;

/** fsyncs an open file descriptor (its bytes and size). */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/** fsyncs a directory so a rename into it is durable. */
async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class FsBlobStore implements BlobStore {
  private readonly tmpDir: string;
  private readonly blobDir: string;
  private readonly knownDirs = new Set<string>();

  /**
   * `root` is the directory that holds `tmp/` and `blobs/` (GRANARY_DATA_DIR); `tag` marks this process's staging
   * files (file-name safe: letters, digits, `-`).
   */
  constructor(
    root: string,
    private readonly tag = 'offline',
  ) {
    this.tmpDir = join(root, 'tmp');
    this.blobDir = join(root, 'blobs');
  }

  async recover(liveTags?: () => Promise<ReadonlySet<string>>): Promise<number> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(this.blobDir, { recursive: true });
    // Listed before the live set is read: a file seen here was created after its process registered, so a tag
    // missing from the later live set is a process that is gone.
    const names = await readdir(this.tmpDir);
    const live = liveTags ? await liveTags() : new Set<string>();
    let removed = 0;
    for (const name of names) {
      const tag = name.split('.')[0] ?? '';
      if (tag === this.tag || live.has(tag)) continue;
      await rm(join(this.tmpDir, name), { recursive: true, force: true });
      removed++;
    }
    return removed;
  }

  /** Path of a sealed blob; throws on an id that is not ours (ids never come from clients, but be safe). */
  private pathOf(id: string): string {
    if (!ID_RE.test(id)) throw new Error(`invalid blob id ${JSON.stringify(id)}`);
    return join(this.blobDir, id.slice(0, 2), id.slice(2, 4), id);
  }

  async stage(): Promise<StagedBlob> {
    const id = randomHexId();
    const tmpPath = join(this.tmpDir, `${this.tag}.${id}.part`);
    // The descriptor outlives the last write (autoClose off): seal() fsyncs through it, so a write-back error is
    // reported to this upload, then closes it; discard() closes it too.
    const sink: WriteStream = createWriteStream(tmpPath, { flags: 'wx', autoClose: false });
    // A failed open or write still ends the stream at once, as with autoClose: later writes fail instead of waiting.
    sink.once('error', () => sink.destroy());
    let done = false;
    // Settles with the stream: every byte written ('finish'), or failed, or closed before its end (destroyed).
    const written = new Promise<void>((resolve, reject) => {
      sink.once('finish', resolve);
      sink.once('error', reject);
      sink.once('close', () => reject(new Error('the staged file was closed before its last write')));
    });
    written.catch(() => undefined);
    const closeSink = (): Promise<void> =>
      new Promise((resolve) => {
        if (sink.closed) return resolve();
        sink.once('close', () => resolve());
        sink.destroy();
      });
    return {
      sink,
      seal: async () => {
        // The writer ended the stream: every byte is written, none is durable yet.
        await written;
        const target = this.pathOf(id);
        const dir = join(target, '..');
        if (!this.knownDirs.has(dir)) {
          await mkdir(dir, { recursive: true });
          this.knownDirs.add(dir);
        }
        await rename(tmpPath, target);
        done = true;
        const fd = (sink as unknown as { fd: number }).fd;
        const [file, dirent] = await Promise.allSettled([fsyncFd(fd), fsyncDir(dir)]);
        await closeSink();
        const failed = file.status === 'rejected' ? file : dirent.status === 'rejected' ? dirent : undefined;
        if (failed) {
          // Not durable: the blob is dropped, the caller answers the storage error.
          await unlink(target).catch(() => undefined);
          throw failed.reason;
        }
        return id;
      },
      discard: async () => {
        if (done) return;
        done = true;
        await closeSink();
        await unlink(tmpPath).catch(() => undefined);
      },
    };
  }

  read(blobId: string, range?: ByteRange): Readable {
    const path = this.pathOf(blobId);
    const opts = { highWaterMark: READ_CHUNK_BYTES };
    return createReadStream(path, range ? { ...opts, start: range.start, end: range.end } : opts);
  }

  /** open → one read of `size` bytes → close, with plain callbacks (no FileHandle, no fstat: the size is known). */
  readSmall(blobId: string, size: number): Promise<Buffer> {
    const path = this.pathOf(blobId);
    return new Promise((resolve, reject) => {
      openFd(path, 'r', (err, fd) => {
        if (err) return reject(err);
        const buf = Buffer.allocUnsafe(size);
        read(fd, buf, 0, size, 0, (readErr, n) => {
          close(fd, () => undefined);
          if (readErr) return reject(readErr);
          if (n !== size) return reject(new Error(`blob ${blobId}: read ${n} of ${size} bytes`));
          resolve(buf);
        });
      });
    });
  }

  async localFile(blobId: string): Promise<{ path: string; release(): Promise<void> }> {
    const path = this.pathOf(blobId);
    await stat(path); // ENOENT now rather than in a subprocess
    return { path, release: async () => undefined };
  }

  /** pwrite at offset 0, then fsync (a header of ≤ 512 bytes: one sector). */
  async rewriteHead(blobId: string, head: Buffer): Promise<void> {
    const fh = await open(this.pathOf(blobId), 'r+');
    try {
      await fh.write(head, 0, head.length, 0);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  async remove(blobId: string): Promise<void> {
    await unlink(this.pathOf(blobId)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async *list(): AsyncIterable<{ id: string; mtimeMs: number }> {
    for (const a of await readdir(this.blobDir).catch(() => [] as string[])) {
      for (const b of await readdir(join(this.blobDir, a)).catch(() => [] as string[])) {
        for (const id of await readdir(join(this.blobDir, a, b)).catch(() => [] as string[])) {
          if (!ID_RE.test(id)) continue;
          const st = await stat(join(this.blobDir, a, b, id)).catch(() => undefined);
          if (st) yield { id, mtimeMs: st.mtimeMs };
        }
      }
    }
  }

  /** `blobs/deployment.json` (never a blob name: blob files live two directories down). */
  private get markerPath(): string {
    return join(this.blobDir, MARKER_NAME);
  }

  async readMarker(): Promise<string | undefined> {
    return readFile(this.markerPath, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  /** Written to a temp file, fsynced, renamed into place, the directory fsynced: durable once resolved. */
  async writeMarker(text: string): Promise<void> {
    await mkdir(this.blobDir, { recursive: true });
    const temp = `${this.markerPath}.${randomHexId()}.tmp`;
    await writeFile(temp, text, { flush: true });
    await rename(temp, this.markerPath);
    await fsyncDir(this.blobDir);
  }
}
