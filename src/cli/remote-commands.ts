/**
 * Remote-only commands (qshell's counterparts, docs/reference/qshell-mapping.md):
 *
 *   granary chgm <remote>:<bucket>/<key> <mime>      | chgm <remote>:<bucket> --from <file>   (key<TAB>mime)
 *   granary chtype <remote>:<bucket>/<key> <0..4>    | chtype <remote>:<bucket> --from <file> (key<TAB>class)
 *   granary url <remote>:<bucket>/<key>… [--expires s] [--domain d]      signed (private) download URLs
 *   granary fetch <url> <remote>:<bucket>/<key>      | fetch <remote>:<bucket> --from <file>  (url[<TAB>key])
 *   granary prefetch <remote>:<bucket>/<key>…        refresh from the bucket's mirror origin (mirrorupdate)
 *   granary pfop <remote>:<bucket>/<key> <fops> [--pipeline p] [--notify-url u] [--force] [--wait]
 *   granary prefop <remote>[:<bucket>] <persistentId>
 *   granary buckets <remote> | domains <remote>:<bucket> | qetag <file>…
 *
 * `--json` everywhere: stable shapes in docs/reference/cli.md. Exit status 1 when anything failed.
 */
import type { Command } from 'commander';
import type { OpResult } from '../transfer/batch.js';
import { TransferError } from '../transfer/errors.js';
import type { RemoteLocation } from '../transfer/location.js';
import { RemoteStore } from '../transfer/remotes.js';
import type { RemoteOpts } from './remote-args.js';
import { OpReport } from './remote-report.js';

const json = (v: unknown): void => void process.stdout.write(`${JSON.stringify(v)}\n`);

async function objects(): Promise<typeof import('./remote-objects.js')> {
  return import('./remote-objects.js');
}

async function account(): Promise<typeof import('../transfer/account.js')> {
  return import('../transfer/account.js');
}

/** A `<remote>` or `<remote>:<bucket>` argument. */
async function remoteAndBucket(text: string): Promise<{ remote: string; bucket?: string }> {
  const colon = text.indexOf(':');
  const remote = colon < 0 ? text : text.slice(0, colon);
  await new RemoteStore().get(remote); // names an unknown remote
  const bucket = colon < 0 ? '' : text.slice(colon + 1).replace(/\/.*$/s, '');
  return bucket === '' ? { remote } : { remote, bucket };
}

function positive(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new TransferError(`${flag} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

/** Fetches each `url[<TAB>key]` line of `file` into `loc` (a key defaults to the URL's path), `concurrency` at a time. */
async function batchFetch(loc: RemoteLocation, file: string, concurrency: number, o: RemoteOpts): Promise<void> {
  const { clientOf, keyLines } = await objects();
  const { fetchUrl } = await account();
  const client = await clientOf(loc);
  const report = new OpReport('fetch', loc.remote, o.json === true, true);
  const running = new Set<Promise<void>>();
  for await (const [url, key] of keyLines(file)) {
    let target = key ?? '';
    if (target === '') {
      try {
        target = decodeURIComponent(new URL(url!).pathname.replace(/^\/+/, ''));
      } catch {
        target = '';
      }
    }
    const op = { op: 'fetch', bucket: loc.bucket, key: loc.prefix + target };
    const p: Promise<void> = (async () => {
      let r: OpResult;
      if (target === '') r = { code: 400, error: `no key for ${JSON.stringify(url)}` };
      else {
        try {
          const a = await fetchUrl(client, url!, loc.bucket, op.key);
          r = { code: 200, data: { ...a } };
        } catch (err) {
          if (err instanceof TransferError && (err.status === 401 || err.status === 631)) throw err;
          r = { code: err instanceof TransferError && err.status ? err.status : 599, error: (err as Error).message };
        }
      }
      report.result(op, r);
    })().finally(() => running.delete(p));
    running.add(p);
    if (running.size >= concurrency) await Promise.race(running);
  }
  await Promise.all(running);
  report.finish();
}

/** Adds the remote-only commands. */
export function addRemoteOnlyCommands(program: Command): void {
  const change = (name: 'chgm' | 'chtype', what: string, valueName: string): void => {
    program
      .command(`${name} <entry> [${valueName}]`)
      .description(`set the ${what} of <remote>:<bucket>/<key>, or of the keys of --from <file> (<key><TAB><${valueName}> per line) under <remote>:<bucket>`)
      .option('--from <file>', 'a file of <key><TAB><value> lines (- for stdin); batched 1,000 per /batch call')
      .option('--json', 'JSON lines: one result per key, then a summary')
      .action(async (entry: string, value: string | undefined, o: RemoteOpts) => (await objects()).remoteChange(name, entry, value, o));
  };
  change('chgm', 'MIME type', 'mime');
  change('chtype', 'storage class (0 standard, 1 IA, 2 archive, 3 deep archive, 4 archive IR)', 'class');

  program
    .command('url <entry...>')
    .description('print signed (private) download URLs of <remote>:<bucket>/<key> …')
    .option('--expires <seconds>', 'validity', '3600')
    .option('--domain <domain>', "download domain (default: the bucket's first bound domain, else path style on the io host)")
    .option('--json', 'one {"bucket","key","url","expires"} line per entry (expires: Unix seconds)')
    .action(async (entries: string[], o: RemoteOpts & { expires: string; domain?: string }) => {
      const { clientOf, entryLoc } = await objects();
      const seconds = positive(o.expires, '--expires', 3600);
      for (const text of entries) {
        const loc = entryLoc(text);
        const url = await (await clientOf(loc)).downloadUrl(loc.bucket, loc.prefix, seconds, o.domain);
        if (o.json) json({ bucket: loc.bucket, key: loc.prefix, url, expires: Math.floor(Date.now() / 1000) + seconds });
        else process.stdout.write(`${url}\n`);
      }
    });

  program
    .command('fetch <source> [destination]')
    .description('fetch a URL into a bucket: fetch <url> <remote>:<bucket>/<key>; or fetch <remote>:<bucket>[/<prefix>] --from <file> (<url>[<TAB><key>] per line)')
    .option('--from <file>', 'a file of <url>[<TAB><key>] lines (- for stdin; the key defaults to the URL path)')
    .option('--concurrency <n>', 'fetches in flight with --from', '4')
    .option('--json', 'JSON lines: one result per URL ({"event":"result","op":"fetch",…,"entry"?}), then a summary')
    .action(async (source: string, destination: string | undefined, o: RemoteOpts & { concurrency: string }) => {
      const { parseRemote } = await import('../transfer/location.js');
      if (o.from !== undefined) {
        if (destination !== undefined) throw new TransferError('fetch --from <file> takes one <remote>:<bucket>[/<prefix>]');
        return batchFetch(parseRemote(source), o.from, positive(o.concurrency, '--concurrency', 4), o);
      }
      if (destination === undefined) throw new TransferError('fetch needs <url> <remote>:<bucket>/<key> (or <remote>:<bucket> --from <file>)');
      const { clientOf, entryLoc } = await objects();
      const loc = entryLoc(destination);
      const a = await (await account()).fetchUrl(await clientOf(loc), source, loc.bucket, loc.prefix);
      if (o.json) json(a);
      else process.stdout.write(`${a.key}\t${a.fsize}\t${a.hash}\t${a.mimeType}\n`);
    });

  program
    .command('prefetch <entry...>')
    .description("refresh <remote>:<bucket>/<key> … from the bucket's mirror origin (qshell mirrorupdate)")
    .option('--json', 'JSON lines: one result per key, then a summary')
    .action(async (entries: string[], o: RemoteOpts) => {
      const { clientOf, entryLoc } = await objects();
      const { prefetch } = await account();
      const locs = entries.map(entryLoc);
      const report = new OpReport('prefetch', locs[0]!.remote, o.json === true);
      for (const loc of locs) {
        let r: OpResult = { code: 200 };
        try {
          await prefetch(await clientOf(loc), loc.bucket, loc.prefix);
        } catch (err) {
          r = { code: err instanceof TransferError && err.status ? err.status : 599, error: (err as Error).message };
        }
        report.result({ op: 'prefetch', bucket: loc.bucket, key: loc.prefix }, r);
      }
      report.finish();
    });

  program
    .command('pfop <entry> <fops>')
    .description('submit persistent fops (";"-separated, each may end with |saveas/…) on <remote>:<bucket>/<key>; prints the persistentId')
    .option('--pipeline <name>', 'queue (pipeline) to run in')
    .option('--notify-url <url>', 'URL told of the result')
    .option('--force', 'overwrite existing results')
    .option('--wait', 'poll until done and print the status as JSON (exit 1 when a fop failed)')
    .option('--json', '{"persistentId"} (with --wait: the status)')
    .action(async (entry: string, fops: string, o: RemoteOpts & { pipeline?: string; notifyUrl?: string; wait?: boolean }) => {
      const { clientOf, entryLoc } = await objects();
      const { pfop, prefop } = await account();
      const loc = entryLoc(entry);
      const client = await clientOf(loc);
      const id = await pfop(client, loc.bucket, loc.prefix, fops, {
        ...(o.pipeline ? { pipeline: o.pipeline } : {}),
        ...(o.notifyUrl ? { notifyUrl: o.notifyUrl } : {}),
        ...(o.force ? { force: true } : {}),
      });
      if (!o.wait) {
        if (o.json) json({ persistentId: id });
        else process.stdout.write(`${id}\n`);
        return;
      }
      for (let delay = 200; ; delay = Math.min(delay * 2, 5000)) {
        const status = await prefop(client, id, loc.bucket);
        if (status.code !== 1 && status.code !== 2) {
          json(status);
          if (status.code !== 0) process.exitCode = 1;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    });

  program
    .command('prefop <remote> <persistentId>')
    .description('print the status of a persistentId as JSON (code 0 done, 1 waiting, 2 running, 3 failed); <remote>[:<bucket>]')
    .action(async (remote: string, id: string) => {
      const { remote: name, bucket } = await remoteAndBucket(remote);
      const { KodoClient } = await import('../transfer/client.js');
      json(await (await account()).prefop(new KodoClient(await new RemoteStore().get(name)), id, bucket));
    });

  program
    .command('buckets <remote>')
    .description("list the buckets of the remote's key pair")
    .option('--json', 'one JSON array of bucket names')
    .action(async (remote: string, o: RemoteOpts) => {
      const { remote: name } = await remoteAndBucket(remote);
      const { KodoClient } = await import('../transfer/client.js');
      const names = await (await account()).listBuckets(new KodoClient(await new RemoteStore().get(name)));
      if (o.json) json(names);
      else process.stdout.write(names.map((n) => `${n}\n`).join(''));
    });

  program
    .command('domains <bucket>')
    .description('list the domains bound to <remote>:<bucket>')
    .option('--json', 'one JSON array of domain names')
    .action(async (bucket: string, o: RemoteOpts) => {
      const { remote, bucket: b } = await remoteAndBucket(bucket);
      if (b === undefined) throw new TransferError('domains needs <remote>:<bucket>');
      const { KodoClient } = await import('../transfer/client.js');
      const names = await (await account()).listDomains(new KodoClient(await new RemoteStore().get(remote)), b);
      if (o.json) json(names);
      else process.stdout.write(names.map((n) => `${n}\n`).join(''));
    });

  program
    .command('qetag <file...>')
    .description('print the Kodo etag (qetag) of local files: <etag><TAB><file>')
    .option('--json', 'one {"file","etag","size"} line per file')
    .action(async (files: string[], o: RemoteOpts) => {
      const { EtagHasher } = await import('../transfer/local-etag.js');
      const { createReadStream } = await import('node:fs');
      for (const file of files) {
        const h = new EtagHasher();
        try {
          for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) h.update(chunk as Buffer);
        } catch (err) {
          throw new TransferError(`cannot read ${file}: ${(err as Error).message}`);
        }
        if (o.json) json({ file, etag: h.etag(), size: h.size });
        else process.stdout.write(`${h.etag()}\t${file}\n`);
      }
    });
}
