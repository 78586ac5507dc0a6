/**
 * The local side of put and sync: every regular file under a directory (or the one file given), with its path
 * relative to the root (`/` separators), size in bytes and mtime in ms. Symbolic links are followed; temp files
 * of downloads in progress (`*.granary-part`) are skipped. Directories are read in name order.
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { PART_SUFFIX } from './download.js';
import { TransferError } from './errors.js';
import { relPathToKey } from './location.js';

export interface LocalFile {
  /** Absolute or as given. */
  path: string;
  /** Relative to the walked root, `/` separators. */
  rel: string;
  size: number;
  mtimeMs: number;
}

/** Whether `path` is a directory, a file, or absent (throws a TransferError when it cannot be read). */
export async function localKind(path: string): Promise<'dir' | 'file' | 'absent'> {
  try {
    const s = await stat(path);
    return s.isDirectory() ? 'dir' : 'file';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'absent';
    throw new TransferError(`cannot read ${path}: ${code ?? (err as Error).message}`);
  }
}

/** Every file under `root` (a directory) or `root` itself (a file). Unreadable entries throw a TransferError. */
export async function* walk(root: string): AsyncGenerator<LocalFile> {
  let s;
  try {
    s = await stat(root);
  } catch (err) {
    throw new TransferError(`cannot read ${root}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!s.isDirectory()) {
    yield { path: root, rel: basename(root), size: s.size, mtimeMs: s.mtimeMs };
    return;
  }
  yield* walkDir(root, '');
}

async function* walkDir(dir: string, rel: string): AsyncGenerator<LocalFile> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch (err) {
    throw new TransferError(`cannot read ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  for (const name of names) {
    if (name.endsWith(PART_SUFFIX)) continue;
    const path = join(dir, name);
    const childRel = rel === '' ? name : join(rel, name);
    let s;
    try {
      s = await stat(path);
    } catch (err) {
      throw new TransferError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (s.isDirectory()) yield* walkDir(path, childRel);
    else if (s.isFile()) yield { path, rel: relPathToKey(childRel), size: s.size, mtimeMs: s.mtimeMs };
  }
}
