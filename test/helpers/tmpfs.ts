/**
 * A small tmpfs mounted for a test (as root: the tests run as root on our machines), to make a data dir run out of
 * space or go read-only for real, and a filler file that takes its free space.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, statfs, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  dir: string;
  /** Bytes free now (statfs `bavail`). */
  free(): Promise<number>;
  /** Writes a filler file until at most `leaveBytes` are free (0: until ENOSPC). */
  fill(leaveBytes?: number): Promise<void>;
  /** Deletes the filler file. */
  unfill(): Promise<void>;
  unmount(): Promise<void>;
}

function mount(args: string[]): void {
  try {
    execFileSync('mount', args, { stdio: 'pipe' });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`mount ${args.join(' ')} failed (these tests need root with CAP_SYS_ADMIN): ${stderr}`, { cause: err });
  }
}

/** Mounts a tmpfs of `sizeBytes` on a new temp dir. */
export async function mountTmpfs(sizeBytes: number, at?: string): Promise<Tmpfs> {
  const dir = at ?? (await mkdtemp(join(tmpdir(), 'granary-tmpfs-')));
  mount(['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir]);
  const filler = join(dir, 'filler');
  const free = async (): Promise<number> => {
    const st = await statfs(dir);
    return st.bavail * st.bsize;
  };
  return {
    dir,
    free,
    fill: async (leaveBytes = 0) => {
      const fh = await open(filler, 'a');
      try {
        const chunk = Buffer.alloc(64 * 1024);
        for (let left = (await free()) - leaveBytes; left > 0; left -= chunk.length) {
          try {
            await fh.write(chunk, 0, Math.min(chunk.length, left));
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ENOSPC') return;
            throw err;
          }
        }
      } finally {
        await fh.close();
      }
    },
    unfill: async () => {
      await unlink(filler).catch(() => undefined);
    },
    unmount: async () => {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      if (!at) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Mounts an empty read-only tmpfs over `dir` (writes below it fail with EROFS); returns the unmount. */
export function mountReadOnlyOver(dir: string): () => void {
  mount(['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', dir]);
  return () => execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
}
