/**
 * A process's resident memory by mapping (Linux /proc/<pid>/smaps, proc(5)): what the kernel holds for it, grouped
 * into the parts the memory breakdown (bench/footprint.ts) names — the node binary's pages, the anonymous memory
 * (V8's heap, malloc's arenas: SQLite's page cache, libvips, Buffers; thread stacks), the brk heap, native
 * libraries (sharp/libvips, better-sqlite3, others) and files mapped by SQLite (the database when mmap_size > 0,
 * the WAL index `-shm`).
 *
 * `rss` counts every resident page the process maps, shared ones (the node binary's text, mapped by every Granary
 * process) in each process that maps them; `pss` divides a shared page between its mappers, so the PSS of all
 * processes added is what they hold together. Sizes in bytes.
 */
import { readFileSync } from 'node:fs';

/** One group's pages, bytes. */
export interface MemoryPart {
  rss: number;
  pss: number;
  /** Pages only this process maps (Private_Clean + Private_Dirty). */
  private: number;
  /** Anonymous pages (not backed by a file). */
  anonymous: number;
}

/** The groups, in the order a breakdown prints them. */
export const PARTS = ['anonymous', 'brk heap', 'node binary', 'sharp/libvips', 'better-sqlite3', 'other native libs', 'meta.db (mmap)', 'WAL index (-shm)', 'other'] as const;
export type PartName = (typeof PARTS)[number];

/** The group of a mapping named `path` (the sixth field of its smaps header line; '' for anonymous memory). */
export function partOf(path: string, nodeBinary = process.execPath): PartName {
  if (path === '') return 'anonymous';
  if (path === '[heap]') return 'brk heap';
  if (path === nodeBinary || /\/node$/.test(path)) return 'node binary';
  if (/sharp|libvips/.test(path)) return 'sharp/libvips';
  if (path.includes('better_sqlite3')) return 'better-sqlite3';
  if (/\/meta\.db$/.test(path)) return 'meta.db (mmap)';
  if (/\/meta\.db-shm$/.test(path)) return 'WAL index (-shm)';
  if (/\.so(\.|$)|\.node$/.test(path)) return 'other native libs';
  return 'other';
}

/** The resident memory of `pid` by group, and the totals (all 0 when the process is gone). */
export function readSmaps(pid: number): { total: MemoryPart; parts: Record<PartName, MemoryPart> } {
  const zero = (): MemoryPart => ({ rss: 0, pss: 0, private: 0, anonymous: 0 });
  const parts = Object.fromEntries(PARTS.map((p) => [p, zero()])) as Record<PartName, MemoryPart>;
  const total = zero();
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return { total, parts };
  }
  let part: MemoryPart = parts.other;
  for (const line of text.split('\n')) {
    // A mapping's header: `<start>-<end> <perms> <offset> <dev> <inode> [path]`.
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      part = parts[partOf((header[1] ?? '').trim())];
      continue;
    }
    const field = /^(Rss|Pss|Private_Clean|Private_Dirty|Anonymous):\s+(\d+) kB/.exec(line);
    if (!field) continue;
    const bytes = Number(field[2]) * 1024;
    const key = field[1] === 'Rss' ? 'rss' : field[1] === 'Pss' ? 'pss' : field[1] === 'Anonymous' ? 'anonymous' : 'private';
    part[key] += bytes;
    total[key] += bytes;
  }
  return { total, parts };
}
