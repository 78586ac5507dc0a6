/**
 * The sync planner: what `granary sync` does with each relative key, given both sides' listings. A key is copied
 * when the destination lacks it ("new"), when the sizes differ ("size"), or when the etags differ ("etag"; a local
 * file's etag is computed only when sizes are equal). With `--delete`, destination keys the source lacks are
 * deleted. Keys outside the include/exclude globs are left alone on both sides.
 */
import type { KodoEntry } from './client.js';
import { fileEtag, isQetag } from './local-etag.js';
import type { KeyFilter } from './session.js';

/** One side's view of a relative key: a local file (`path`) or a remote entry (`entry`). Size in bytes. */
export interface SideEntry {
  rel: string;
  size: number;
  path?: string;
  /** Local files: modification time, ms. */
  mtimeMs?: number;
  entry?: KodoEntry;
}

export type Decision = { op: 'copy'; reason: 'new' | 'size' | 'etag' } | { op: 'skip'; reason: 'same' };

/** The etag of a side entry: the remote hash, or the local file's computed etag. */
export async function etagOf(e: SideEntry): Promise<string> {
  if (e.entry) return e.entry.hash;
  return fileEtag(e.path!);
}

/** What to do with `src` given the destination's `dst` (see the module comment). */
export async function decide(src: SideEntry, dst: SideEntry | undefined, hashOf: (e: SideEntry) => Promise<string> = etagOf): Promise<Decision> {
  if (!dst) return { op: 'copy', reason: 'new' };
  if (src.size !== dst.size) return { op: 'copy', reason: 'size' };
  const [a, b] = await Promise.all([hashOf(src), hashOf(dst)]);
  // A v2 multipart etag (`n…`) cannot be compared with a plain qetag of the same bytes: equal sizes then count as same.
  if (a !== b && isQetag(a) && isQetag(b)) return { op: 'copy', reason: 'etag' };
  if (a !== b && !isQetag(a) && !isQetag(b)) return { op: 'copy', reason: 'etag' };
  return { op: 'skip', reason: 'same' };
}

/** Destination keys to delete with `--delete`: admitted by the filter and absent from the source. */
export function extras(src: ReadonlyMap<string, SideEntry>, dst: ReadonlyMap<string, SideEntry>, filter: KeyFilter): SideEntry[] {
  const out: SideEntry[] = [];
  for (const [rel, e] of dst) if (!src.has(rel) && filter.admits(rel)) out.push(e);
  return out;
}
