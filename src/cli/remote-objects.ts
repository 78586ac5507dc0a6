/**
 * The remote forms of the entry commands: `ls`, `stat`, `rm`, `cp`, `mv` (which also have offline forms on the
 * data dir, cli/entries.ts) and `chgm`, `chtype` (remote only). An argument is remote when the text before its
 * first `:` names a known remote (`granary remote list`) and no `--data-dir`/`--metadata`/`--create-data-dir`
 * flag asks for the data dir: `<remote>:<bucket>/<key>`, or `<remote>:<bucket>` with `--from <file>` (keys one
 * per line; `-` reads stdin), run through `/batch` 1,000 ops a call (transfer/batch.ts). Results: remote-report.ts.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { BATCH_MAX, batchOnce, type EntryOp, type OpName } from '../transfer/batch.js';
import { KodoClient } from '../transfer/client.js';
import { TransferError } from '../transfer/errors.js';
import { parseRemote, type RemoteLocation } from '../transfer/location.js';
import type { RemoteOpts } from './remote-args.js';
import { RemoteStore } from '../transfer/remotes.js';
import { OpReport } from './remote-report.js';

/** The client of a remote location. */
export async function clientOf(loc: RemoteLocation): Promise<KodoClient> {
  return new KodoClient(await new RemoteStore().get(loc.remote));
}

/** `<remote>:<bucket>/<key>` with a non-empty key. */
export function entryLoc(text: string): RemoteLocation {
  const loc = parseRemote(text);
  if (loc.prefix === '') throw new TransferError(`${JSON.stringify(text)} names no key: <remote>:<bucket>/<key>`);
  return loc;
}

/** The lines of a key file (`-`: stdin) split at tabs; empty lines skipped, a trailing CR dropped. */
export async function* keyLines(file: string): AsyncGenerator<string[]> {
  const input = file === '-' ? process.stdin : createReadStream(file, 'utf8');
  const opened = new Promise<void>((resolve, reject) => {
    if (file === '-') resolve();
    else input.once('open', () => resolve()).once('error', (err: Error) => reject(new TransferError(`cannot read ${file}: ${err.message}`)));
  });
  await opened;
  for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') continue;
    yield line.split('\t');
  }
}

/**
 * Runs ops through `/batch`, BATCH_MAX a call (a new call also whenever the bucket changes), reporting each
 * result. A call refused whole for the keys (401) or the bucket (631) ends the command; another failure of a
 * call marks its ops failed and goes on.
 */
export async function runOps(client: KodoClient, ops: AsyncIterable<EntryOp> | Iterable<EntryOp>, report: OpReport): Promise<void> {
  let chunk: EntryOp[] = [];
  const flush = async (): Promise<void> => {
    if (chunk.length === 0) return;
    const batch = chunk;
    chunk = [];
    try {
      const results = await batchOnce(client, batch);
      batch.forEach((o, i) => report.result(o, results[i]!));
    } catch (err) {
      const status = err instanceof TransferError ? err.status : undefined;
      if (status === 401 || status === 631 || status === undefined) throw err;
      for (const o of batch) report.result(o, { code: status, error: (err as Error).message });
    }
  };
  for await (const o of ops) {
    if (chunk.length >= BATCH_MAX || (chunk.length > 0 && chunk[0]!.bucket !== o.bucket)) await flush();
    chunk.push(o);
  }
  await flush();
  report.finish();
}

function sameRemote(a: RemoteLocation, b: RemoteLocation, op: string): void {
  if (a.remote !== b.remote) {
    throw new TransferError(`${op} works inside one remote (server-side, no bytes move); between remotes use granary sync or granary migrate`);
  }
}

/** `stat`/`rm` of entries, or of the keys of a file under one bucket. */
export async function remoteEntries(op: 'stat' | 'rm', args: string[], o: RemoteOpts): Promise<void> {
  if (o.from !== undefined) {
    if (args.length !== 1) throw new TransferError(`${op} --from <file> takes one <remote>:<bucket>`);
    const loc = parseRemote(args[0]!);
    const client = await clientOf(loc);
    async function* ops(): AsyncGenerator<EntryOp> {
      for await (const [key] of keyLines(o.from!)) yield { op, bucket: loc.bucket, key: loc.prefix + key! };
    }
    return runOps(client, ops(), new OpReport(op, loc.remote, o.json === true, true));
  }
  const locs = args.map(entryLoc);
  for (const l of locs) sameRemote(locs[0]!, l, op);
  const client = await clientOf(locs[0]!);
  return runOps(client, locs.map((l) => ({ op, bucket: l.bucket, key: l.prefix })), new OpReport(op, locs[0]!.remote, o.json === true));
}

/** `cp`/`mv` of one entry, or of the keys of a file (`src[<TAB>dst]`) from one bucket to another (or the same). */
export async function remoteCopy(op: 'cp' | 'mv', from: string, to: string, o: RemoteOpts): Promise<void> {
  const src = parseRemote(from);
  const dst = parseRemote(to);
  sameRemote(src, dst, op);
  const client = await clientOf(src);
  const force = o.force === true;
  if (o.from !== undefined) {
    async function* ops(): AsyncGenerator<EntryOp> {
      for await (const [key, target] of keyLines(o.from!)) {
        const t = target !== undefined && target !== '' ? target : key!;
        yield { op, bucket: src.bucket, key: src.prefix + key!, to: { bucket: dst.bucket, key: dst.prefix + t }, force };
      }
    }
    return runOps(client, ops(), new OpReport(op, src.remote, o.json === true, true));
  }
  if (src.prefix === '') throw new TransferError(`${JSON.stringify(from)} names no key (or give --from <file>)`);
  const key = dst.prefix === '' || dst.prefix.endsWith('/') ? `${dst.prefix}${src.prefix.slice(src.prefix.lastIndexOf('/') + 1)}` : dst.prefix;
  return runOps(client, [{ op, bucket: src.bucket, key: src.prefix, to: { bucket: dst.bucket, key }, force }], new OpReport(op, src.remote, o.json === true));
}

/** `chgm <entry> <mime>` / `chtype <entry> <class>`, or `--from` a file of `key<TAB>value` lines. */
export async function remoteChange(op: Extract<OpName, 'chgm' | 'chtype'>, target: string, value: string | undefined, o: RemoteOpts): Promise<void> {
  const check = (v: string | undefined, key: string): string => {
    if (v === undefined || v === '') throw new TransferError(`${op}: no ${op === 'chgm' ? 'MIME type' : 'storage class'} for ${JSON.stringify(key)}`);
    if (op === 'chtype' && !/^[0-4]$/.test(v)) throw new TransferError(`chtype: the storage class is 0 (standard), 1 (IA), 2 (archive), 3 (deep archive) or 4 (archive IR), got ${JSON.stringify(v)}`);
    return v;
  };
  if (o.from !== undefined) {
    const loc = parseRemote(target);
    const client = await clientOf(loc);
    async function* ops(): AsyncGenerator<EntryOp> {
      for await (const [key, v] of keyLines(o.from!)) yield { op, bucket: loc.bucket, key: loc.prefix + key!, value: check(v ?? value, key!) };
    }
    return runOps(client, ops(), new OpReport(op, loc.remote, o.json === true, true));
  }
  const loc = entryLoc(target);
  const client = await clientOf(loc);
  return runOps(client, [{ op, bucket: loc.bucket, key: loc.prefix, value: check(value, loc.prefix) }], new OpReport(op, loc.remote, o.json === true));
}

/** The stable fields of a listed entry (`--json` lines of `ls`). */
interface ListedEntry {
  key: string;
  fsize: number;
  hash: string;
  mimeType: string;
  putTime: number;
  type: number;
}

/**
 * `ls <remote>:<bucket>[/<prefix>]`: every entry under the prefix, markers followed (1,000 a page); with
 * `--delimiter`, common prefixes as `<prefix>` lines (`{"prefix"}` in JSON). `--limit n` stops after n lines.
 */
export async function remoteLs(text: string, o: RemoteOpts): Promise<void> {
  const loc = parseRemote(text);
  const client = await clientOf(loc);
  let left = o.limit === undefined ? Infinity : Number(o.limit);
  if (o.limit !== undefined && (!Number.isInteger(left) || left < 1)) throw new TransferError(`--limit must be a positive integer, got ${JSON.stringify(o.limit)}`);
  let marker = '';
  do {
    const q = new URLSearchParams({ bucket: loc.bucket, prefix: loc.prefix, marker, limit: String(Math.min(1000, left)), delimiter: o.delimiter ?? '' });
    const page = await client.call<{ items?: ListedEntry[]; commonPrefixes?: string[]; marker?: string } | null>(loc.bucket, 'rsf', 'POST', `/list?${q.toString()}`);
    let out = '';
    for (const p of page?.commonPrefixes ?? []) {
      if (left <= 0) break;
      left -= 1;
      out += o.json ? `${JSON.stringify({ prefix: p })}\n` : `${p}\n`;
    }
    for (const it of page?.items ?? []) {
      if (left <= 0) break;
      left -= 1;
      const e: ListedEntry = { key: it.key, fsize: it.fsize, hash: it.hash, mimeType: it.mimeType, putTime: it.putTime, type: it.type ?? 0 };
      out += o.json ? `${JSON.stringify(e)}\n` : `${e.key}\t${e.fsize}\t${e.hash}\t${e.mimeType}\t${e.putTime}\n`;
    }
    process.stdout.write(out);
    marker = page?.marker ?? '';
  } while (marker !== '' && left > 0);
}
