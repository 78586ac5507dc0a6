/** Operator commands on entries: `stat`, `rm`, `ls`, `cp`, `mv` (root rights, offline on the data dir). */
import type { Command } from 'commander';
import { copyEntry, moveEntry } from '../objects/manage/copy.js';
import { deleteEntry } from '../objects/manage/delete.js';
import { statEntry } from '../objects/manage/stat.js';
import { streamObjects } from '../objects/list.js';
import { toJson } from '../roles/json.js';
import { entryArg, offline, withDataDir, type Opts } from './context.js';

/** Adds the entry commands. */
export function addEntryCommands(program: Command): void {
  withDataDir(program.command('stat <entry>').description('print an entry as JSON (<bucket>:<key>)')).action(
    (entry: string, opts: Opts) =>
      offline(opts, async (g) => {
        process.stdout.write(`${toJson(await statEntry(g, entryArg(entry)))}\n`);
      }),
  );
  withDataDir(program.command('rm <entry...>').description('delete entries (<bucket>:<key> …)')).action(
    (entries: string[], opts: Opts) =>
      offline(opts, async (g) => {
        for (const e of entries) {
          await deleteEntry(g, entryArg(e));
          process.stdout.write(`deleted ${e}\n`);
        }
      }),
  );
  withDataDir(program.command('ls <bucket>').description('list entries: key, size, hash, MIME, putTime (100 ns)'))
    .option('--prefix <p>', 'only keys starting with p', '')
    .option('--delimiter <d>', 'roll keys up into common prefixes at d (shown ending with d)', '')
    .action((bucket: string, opts: Opts) =>
      offline(opts, async (g) => {
        const pages = await streamObjects(g, g.keys.accessKey, {
          bucket,
          prefix: opts.prefix ?? '',
          delimiter: opts.delimiter ?? '',
          marker: '',
          limit: null,
          needParts: false,
        });
        for await (const lines of pages) {
          let out = '';
          for (const line of lines) {
            const it = line.item;
            out += it
              ? `${String(it.key)}\t${String(it.fsize)}\t${String(it.hash)}\t${String(it.mimeType)}\t${String(it.putTime)}\n`
              : `${line.dir}\n`;
          }
          process.stdout.write(out);
        }
      }),
    );
  const copyLike = (name: 'cp' | 'mv', fn: typeof copyEntry, verb: string): void => {
    withDataDir(program.command(`${name} <from> <to>`).description(`${verb} an entry (<bucket>:<key>; no bytes are copied)`))
      .option('--force', 'replace an existing target')
      .action((from: string, to: string, opts: Opts & { force?: boolean }) =>
        offline(opts, async (g) => {
          await fn(g, entryArg(from), entryArg(to), opts.force === true);
          process.stdout.write(`${from} -> ${to}\n`);
        }),
      );
  };
  copyLike('cp', copyEntry, 'copy');
  copyLike('mv', moveEntry, 'move');
}
