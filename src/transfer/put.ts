/**
 * `granary put <local-file|dir> <remote>:<bucket>[/<prefix>]`: uploads a file or a directory tree, `concurrency`
 * files at a time, each verified by etag (upload.ts). Keys: for a file, `<prefix>` itself, or `<prefix><name>` when
 * the prefix is empty or ends with `/`; for a directory, `<prefix>/<relative path>`. Include/exclude globs apply
 * to the relative path. Multipart uploads keep resume records, so running the same put again after an
 * interruption sends only the parts not yet stored.
 */
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import type { KodoClient } from './client.js';
import { TransferError } from './errors.js';
import { dirPrefix, type RemoteLocation } from './location.js';
import { forEachLimit } from './pool.js';
import { errorText, type Session } from './session.js';
import { uploadObject } from './upload.js';
import type { ByteSource } from './upload-types.js';
import { localKind, walk, type LocalFile } from './walker.js';

/**
 * A local file as a ByteSource (resumable: identity = size and mtime; with the remote, bucket and key it names
 * the resume record, resumable-v2.ts).
 */
export function fileSource(f: LocalFile): ByteSource {
  return {
    size: f.size,
    name: basename(f.path),
    open: () => createReadStream(f.path, { highWaterMark: 1024 * 1024 }),
    resumeId: `${f.size}\n${f.mtimeMs}`,
  };
}

/** Uploads one local file to `bucket:key` and reports it (as `label`, default the key). */
export async function putFile(s: Session, client: KodoClient, bucket: string, key: string, f: LocalFile, label = key): Promise<void> {
  try {
    const r = await uploadObject(client, bucket, key, fileSource(f), {}, {
      ...(s.opts.limiter ? { limiter: s.opts.limiter } : {}),
      onBytes: (n) => s.reporter.bytes(n),
      onSkipped: (n) => s.reporter.passed(n),
      records: s.records,
    });
    s.reporter.done({
      key: label,
      action: 'copied',
      bytes: f.size,
      via: f.size < 4 * 1024 * 1024 ? 'form' : 'multipart',
      ...(r.resumedBytes ? { resumedBytes: r.resumedBytes } : {}),
    });
  } catch (err) {
    s.reporter.done({ key: label, action: 'failed', bytes: 0, error: errorText(err) });
  }
}

/** Runs `put` (see the module comment). */
export async function runPut(s: Session, local: string, dst: RemoteLocation): Promise<void> {
  const kind = await localKind(local);
  if (kind === 'absent') throw new TransferError(`cannot read ${local}: no such file or directory`);
  const client = await s.client(dst.remote);
  await client.checkBucket(dst.bucket);
  const files: Array<{ key: string; file: LocalFile }> = [];
  if (kind === 'file') {
    for await (const f of walk(local)) {
      const key = dst.prefix === '' || dst.prefix.endsWith('/') ? `${dst.prefix}${f.rel}` : dst.prefix;
      files.push({ key, file: f });
    }
  } else {
    const prefix = dirPrefix(dst.prefix);
    for await (const f of walk(local)) if (s.opts.filter.admits(f.rel)) files.push({ key: `${prefix}${f.rel}`, file: f });
  }
  s.reporter.addTotal(files.length, files.reduce((n, f) => n + f.file.size, 0));
  await forEachLimit(files, s.opts.concurrency, ({ key, file }) => putFile(s, client, dst.bucket, key, file));
}
