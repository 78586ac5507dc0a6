/**
 * `granary sync <src> <dst>`: either side a local directory or `<remote>:<bucket>[/<prefix>]` (the prefix taken
 * as a directory: `photos` means `photos/…`). Copies what differs (sync-plan.ts) — local→remote by upload,
 * remote→local by download, remote→remote streamed through this machine — `concurrency` at a time, optionally
 * deletes extras (`--delete`), and with `--dry-run` only prints the plan (`copy <key> (reason)` /
 * `delete <key>` lines, or `would-copy`/`would-delete` events with `--json`). Every event — copies, skips,
 * failures, deletions, dry run or not — names the path relative to the two synced roots (`/`-separated): the one
 * name an entry has on both sides.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { KodoClient } from './client.js';
import { encodedEntry } from './client.js';
import { fullEntry, streamCopy } from './copy.js';
import { TransferError } from './errors.js';
import { getEntry } from './get.js';
import { dirPrefix, keyToRelPath, type Location, type RemoteLocation } from './location.js';
import { forEachLimit } from './pool.js';
import { putFile } from './put.js';
import { errorText, type Session } from './session.js';
import { decide, extras, type SideEntry } from './sync-plan.js';
import { localKind, walk } from './walker.js';

interface Side {
  loc: Location;
  client?: KodoClient;
  prefix: string;
  entries: Map<string, SideEntry>;
}

async function listSide(s: Session, loc: Location, isSource: boolean): Promise<Side> {
  const entries = new Map<string, SideEntry>();
  if (loc.kind === 'local') {
    const kind = await localKind(loc.path);
    if (kind === 'file') throw new TransferError(`${loc.path} is a file; sync works on directories`);
    if (kind === 'absent') {
      if (isSource) throw new TransferError(`cannot read ${loc.path}: no such directory`);
      return { loc, prefix: '', entries };
    }
    for await (const f of walk(loc.path)) entries.set(f.rel, { rel: f.rel, size: f.size, path: f.path, mtimeMs: f.mtimeMs });
    return { loc, prefix: '', entries };
  }
  const client = await s.client(loc.remote);
  await client.checkBucket(loc.bucket);
  const prefix = dirPrefix(loc.prefix);
  for await (const entry of client.list(loc.bucket, prefix)) {
    const rel = entry.key.slice(prefix.length);
    if (rel === '' || entry.key.endsWith('/')) continue;
    entries.set(rel, { rel, size: entry.fsize, entry });
  }
  return { loc, client, prefix, entries };
}

/** Copies one relative key from `src` to `dst` (the sides' kinds pick how). */
async function copyOne(s: Session, src: Side, dst: Side, e: SideEntry): Promise<void> {
  const key = src.loc.kind === 'remote' ? e.entry!.key : e.rel;
  if (src.loc.kind === 'local' && dst.loc.kind === 'remote') {
    const f = { path: e.path!, rel: e.rel, size: e.size, mtimeMs: e.mtimeMs ?? 0 };
    return putFile(s, dst.client!, dst.loc.bucket, `${dst.prefix}${e.rel}`, f, e.rel);
  }
  if (src.loc.kind === 'remote' && dst.loc.kind === 'local') {
    let target: string;
    try {
      target = join(dst.loc.path, keyToRelPath(e.rel));
    } catch (err) {
      s.reporter.done({ key, action: 'failed', bytes: 0, error: errorText(err) });
      return;
    }
    return getEntry(s, src.client!, src.loc.bucket, e.entry!, target);
  }
  const from = src.loc as RemoteLocation;
  const to = dst.loc as RemoteLocation;
  try {
    const entry = await fullEntry(src.client!, from.bucket, e.entry!);
    await streamCopy(src.client!, from.bucket, entry, dst.client!, to.bucket, `${dst.prefix}${e.rel}`, {
      ...(s.opts.limiter ? { limiter: s.opts.limiter } : {}),
      ...(s.opts.domain ? { domain: s.opts.domain } : {}),
      onBytes: (n) => s.reporter.bytes(n),
    });
    s.reporter.done({ key, action: 'copied', bytes: e.size, via: 'stream' });
  } catch (err) {
    s.reporter.done({ key, action: 'failed', bytes: 0, error: errorText(err) });
  }
}

async function deleteOne(s: Session, dst: Side, e: SideEntry): Promise<void> {
  const key = e.rel;
  try {
    if (dst.loc.kind === 'local') await rm(e.path!);
    else await dst.client!.call(dst.loc.bucket, 'rs', 'POST', `/delete/${encodedEntry(dst.loc.bucket, e.entry!.key)}`);
    s.reporter.done({ key, action: 'deleted', bytes: 0 });
  } catch (err) {
    s.reporter.done({ key, action: 'failed', bytes: 0, error: `delete: ${errorText(err)}` });
  }
}

/** Runs `sync` (see the module comment). */
export async function runSync(s: Session, srcLoc: Location, dstLoc: Location, opts: { delete: boolean }): Promise<void> {
  if (srcLoc.kind === 'local' && dstLoc.kind === 'local') throw new TransferError('sync needs at least one side to be <remote>:<bucket>[/<prefix>]');
  const src = await listSide(s, srcLoc, true);
  const dst = await listSide(s, dstLoc, false);
  const candidates = [...src.entries.values()].filter((e) => s.opts.filter.admits(e.rel));
  const toDelete = opts.delete ? extras(src.entries, dst.entries, s.opts.filter) : [];
  s.reporter.addTotal(candidates.length + toDelete.length, 0);
  await forEachLimit(candidates, s.opts.concurrency, async (e) => {
    const key = e.rel;
    let d;
    try {
      d = await decide(e, dst.entries.get(e.rel));
    } catch (err) {
      s.reporter.done({ key, action: 'failed', bytes: 0, error: errorText(err) });
      return;
    }
    if (d.op === 'skip') return s.reporter.done({ key, action: 'skipped', bytes: 0, reason: d.reason });
    if (s.opts.dryRun) return s.reporter.done({ key, action: 'would-copy', bytes: e.size, reason: d.reason });
    s.reporter.addTotal(0, e.size);
    await copyOne(s, src, dst, e);
  });
  await forEachLimit(toDelete, s.opts.concurrency, async (e) => {
    if (s.opts.dryRun) return s.reporter.done({ key: e.rel, action: 'would-delete', bytes: 0 });
    await deleteOne(s, dst, e);
  });
}
