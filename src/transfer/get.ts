/**
 * `granary get <remote>:<bucket>/<key|prefix> <local>`: downloads one object or every object under a prefix,
 * `concurrency` at a time, each verified by etag and renamed into place only then (download.ts).
 *
 * One object when `<key>` names an existing entry: written to `<local>`, or into it when `<local>` is a
 * directory or ends with a separator. Otherwise a prefix: each key's part after the prefix's last `/` becomes a
 * path under `<local>` (so `photos` gives `<local>/photos/…` and `photos/` gives `<local>/…`). Keys that cannot be
 * safe relative paths, and directory markers (keys ending with `/`), are reported and not written.
 *
 * Like rsync, a target that already holds the entry — same size and the same etag (the qetag of the local file,
 * docs/development/kodo-protocol.md §7, local-etag.ts) — is skipped (`skipped`, reason `same size and etag`), so
 * running the same get again downloads nothing. Entries whose hash is not a plain qetag are downloaded again.
 */
import { stat } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import type { KodoClient, KodoEntry } from './client.js';
import { downloadToFile } from './download.js';
import { TransferError } from './errors.js';
import { fileEtag, isQetag } from './local-etag.js';
import { keyToRelPath, type RemoteLocation } from './location.js';
import { forEachLimit } from './pool.js';
import { errorText, type Session } from './session.js';
import { localKind } from './walker.js';

/** True when the local file `target` already holds `entry` (same size, same qetag). */
export async function alreadyThere(target: string, entry: KodoEntry): Promise<boolean> {
  const st = await stat(target).catch(() => undefined);
  if (!st || !st.isFile() || st.size !== entry.fsize || !isQetag(entry.hash)) return false;
  return (await fileEtag(target)) === entry.hash;
}

/** Downloads one entry to `target` (skipped when it is there already) and reports it. */
export async function getEntry(s: Session, client: KodoClient, bucket: string, entry: KodoEntry, target: string): Promise<void> {
  try {
    if (await alreadyThere(target, entry)) {
      s.reporter.passed(entry.fsize);
      s.reporter.done({ key: entry.key, action: 'skipped', bytes: 0, reason: 'same size and etag' });
      return;
    }
    await downloadToFile(client, bucket, entry, target, {
      ...(s.opts.limiter ? { limiter: s.opts.limiter } : {}),
      ...(s.opts.domain ? { domain: s.opts.domain } : {}),
      onBytes: (n) => s.reporter.bytes(n),
      onSkipped: (n) => s.reporter.passed(n),
    });
    s.reporter.done({ key: entry.key, action: 'copied', bytes: entry.fsize, via: 'get' });
  } catch (err) {
    s.reporter.done({ key: entry.key, action: 'failed', bytes: 0, error: errorText(err) });
  }
}

/** Runs `get` (see the module comment). */
export async function runGet(s: Session, src: RemoteLocation, local: string): Promise<void> {
  const client = await s.client(src.remote);
  await client.checkBucket(src.bucket);
  const kind = await localKind(local);
  if (src.prefix !== '' && !src.prefix.endsWith('/')) {
    const entry = await client.stat(src.bucket, src.prefix);
    if (entry) {
      const target = kind === 'dir' || local.endsWith(sep) || local.endsWith('/') ? join(local, basename(entry.key)) : local;
      s.reporter.addTotal(1, entry.fsize);
      await getEntry(s, client, src.bucket, entry, target);
      return;
    }
  }
  if (kind === 'file') throw new TransferError(`${local} is a file; a prefix is downloaded into a directory`);
  const base = src.prefix.slice(0, src.prefix.lastIndexOf('/') + 1);
  const jobs: Array<{ entry: KodoEntry; target: string }> = [];
  for await (const entry of client.list(src.bucket, src.prefix)) {
    const rel = entry.key.slice(base.length);
    if (!s.opts.filter.admits(rel)) continue;
    if (entry.key.endsWith('/')) {
      s.reporter.done({ key: entry.key, action: 'skipped', bytes: 0, reason: 'directory marker' });
      continue;
    }
    try {
      jobs.push({ entry, target: join(local, keyToRelPath(rel)) });
    } catch (err) {
      s.reporter.done({ key: entry.key, action: 'failed', bytes: 0, error: errorText(err) });
    }
  }
  if (jobs.length === 0 && src.prefix !== '') throw new TransferError(`remote ${src.remote}, bucket ${src.bucket}: no object matches ${JSON.stringify(src.prefix)}`);
  s.reporter.addTotal(jobs.length, jobs.reduce((n, j) => n + j.entry.fsize, 0));
  await forEachLimit(jobs, s.opts.concurrency, ({ entry, target }) => getEntry(s, client, src.bucket, entry, target));
}
