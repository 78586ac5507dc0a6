/**
 * Entry commands `stat`, `rm`, `ls`, `cp`, `mv` in two forms:
 * - offline on the data dir (root rights): `<bucket>:<key>` entries, `ls <bucket>`;
 * - on a remote: `<remote>:<bucket>/<key>` (`ls <remote>:<bucket>[/<prefix>]`), with `--from <file>` batches and
 *   `--json` (cli/remote-objects.ts).
 * An argument is remote when the text before its first `:` names a known remote and no data-dir flag
 * (`--data-dir`, `--metadata`, `--create-data-dir`) is given; those flags always pick the data dir. The data-dir
 * form needs the data dir chosen explicitly (a flag or GRANARY_DATA_DIR): otherwise an unknown `<name>:` is an
 * unknown remote, never a local bucket (cli/remote-args.ts).
 */
import type { Command } from 'commander';
import type { Opts } from './context.js';
import { withDataDir } from './data-dir-flags.js';
import { checkRemoteNames, isRemoteArg, remoteNames, type RemoteOpts } from './remote-args.js';

// The stores and the SDK are imported when a form runs: registering these commands loads neither.
const offlineParts = async () => {
  const [context, copy, del, stat, list, json] = await Promise.all([
    import('./context.js'),
    import('../objects/manage/copy.js'),
    import('../objects/manage/delete.js'),
    import('../objects/manage/stat.js'),
    import('../objects/list.js'),
    import('../bigint-json.js'),
  ]);
  return { ...context, ...copy, ...del, ...stat, ...list, ...json };
};

type Both = Opts & RemoteOpts;

/** Whether every argument is remote (some but not all is an error). */
async function remoteForm(args: string[], o: Both, command: string): Promise<boolean> {
  const names = await remoteNames();
  const remote = args.map((a) => isRemoteArg(a, names, o));
  if (remote.every(Boolean)) return true;
  if (remote.some(Boolean)) throw new Error(`${command}: either every argument is <remote>:<bucket>/<key> or none is (the data dir's <bucket>:<key>)`);
  checkRemoteNames(args, names, o);
  if (o.from !== undefined || o.json || o.limit !== undefined) throw new Error(`${command}: --from, --json and --limit are for remotes (<remote>:<bucket>…); see granary remote list`);
  return false;
}

/** The remote options shared by the entry commands. */
function withRemote(cmd: Command): Command {
  return cmd.option('--json', 'remote: JSON lines (one result per key, then a summary)');
}

/** Adds the entry commands. */
export function addEntryCommands(program: Command): void {
  withRemote(
    withDataDir(
      program
        .command('stat <entry...>')
        .description('print entries as JSON: <remote>:<bucket>/<key> on a remote, or <bucket>:<key> in the data dir')
        .option('--from <file>', 'remote: stat the keys listed in <file> (one per line; - for stdin) under <remote>:<bucket>'),
    ),
  ).action(async (entries: string[], o: Both) => {
    if (await remoteForm(entries, o, 'stat')) return (await import('./remote-objects.js')).remoteEntries('stat', entries, o);
    const { offline, toJson, statEntry, entryArg } = await offlineParts();
    const [{ encryptionOf }, { findLiveObject }] = await Promise.all([import('../objects/manage/encryption-of.js'), import('../objects/read.js')]);
    return offline(o, async (g) => {
      for (const e of entries) {
        const ref = entryArg(e);
        const out = await statEntry(g, ref);
        // Offline only: how the entry is encrypted (objects/manage/encryption-of.ts); the Kodo stat answer has no such field.
        const rec = await findLiveObject(g, ref.bucket, ref.key);
        if (rec) out.encryption = await encryptionOf(g, rec);
        process.stdout.write(`${toJson(out)}\n`);
      }
    });
  });
  withRemote(
    withDataDir(
      program
        .command('rm <entry...>')
        .description('delete entries: <remote>:<bucket>/<key> … on a remote, or <bucket>:<key> … in the data dir')
        .option('--from <file>', 'remote: delete the keys listed in <file> (one per line; - for stdin) under <remote>:<bucket>'),
    ),
  ).action(async (entries: string[], o: Both) => {
    if (await remoteForm(entries, o, 'rm')) return (await import('./remote-objects.js')).remoteEntries('rm', entries, o);
    const { offline, deleteEntry, entryArg } = await offlineParts();
    return offline(o, async (g) => {
      for (const e of entries) {
        await deleteEntry(g, entryArg(e));
        process.stdout.write(`deleted ${e}\n`);
      }
    });
  });
  withRemote(
    withDataDir(
      program
        .command('ls <bucket>')
        .description('list entries (key, size, hash, MIME, putTime in 100 ns): <remote>:<bucket>[/<prefix>] on a remote, or <bucket> in the data dir'),
    ),
  )
    .option('--prefix <p>', 'data dir: only keys starting with p (remote: write <remote>:<bucket>/<p>)', '')
    .option('--delimiter <d>', 'roll keys up into common prefixes at d (shown ending with d)', '')
    .option('--limit <n>', 'remote: at most n lines')
    .option('--versions', 'every version and delete marker (key, versionId, size, putTime, state); a remote needs --s3-host')
    .action(async (bucket: string, o: Both & { versions?: boolean }) => {
      const remote = await remoteForm([bucket], o, 'ls');
      if (o.versions) return lsVersions(bucket, remote, o);
      if (remote) return (await import('./remote-objects.js')).remoteLs(bucket, o);
      const { offline, streamObjects } = await offlineParts();
      return offline(o, async (g) => {
        const pages = await streamObjects(g, g.keys.accessKey, {
          bucket,
          prefix: o.prefix ?? '',
          delimiter: o.delimiter ?? '',
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
      });
    });
  const copyLike = (name: 'cp' | 'mv', verb: string): void => {
    withRemote(
      withDataDir(
        program
          .command(`${name} <from> <to>`)
          .description(
            `${verb} an entry server-side (no bytes move): <remote>:<bucket>/<key> <remote>:<bucket>[/<key>] on a remote ` +
              `(a target ending in / or without a key keeps the name), or <bucket>:<key> <bucket>:<key> in the data dir`,
          )
          .option('--from <file>', `remote: ${verb} the keys listed in <file> (<key> or <key><TAB><new key> per line) from <remote>:<bucket> to <remote>:<bucket>`),
      ),
    )
      .option('--force', 'replace an existing target')
      .action(async (from: string, to: string, o: Both & { force?: boolean }) => {
        if (await remoteForm([from, to], o, name)) return (await import('./remote-objects.js')).remoteCopy(name, from, to, o);
        const parts = await offlineParts();
        const fn = name === 'cp' ? parts.copyEntry : parts.moveEntry;
        return parts.offline(o, async (g) => {
          await fn(g, parts.entryArg(from), parts.entryArg(to), o.force === true);
          process.stdout.write(`${from} -> ${to}\n`);
        });
      });
  };
  copyLike('cp', 'copy');
  copyLike('mv', 'move');
  withRemote(
    withDataDir(
      program
        .command('restore <entry>')
        .description('copy a version onto its key as the current one: <remote>:<bucket>/<key> on a remote (needs --s3-host), or <bucket>:<key> in the data dir')
        .requiredOption('--version-id <id>', 'the version to restore (granary ls --versions lists them)'),
    ),
  ).action(async (entry: string, o: Both & { versionId: string }) => {
    const v = await import('./versions.js');
    if (await remoteForm([entry], o, 'restore')) {
      const { entryLoc } = await import('./remote-objects.js');
      const id = await v.remoteRestore(entryLoc(entry), o.versionId);
      return void process.stdout.write(o.json ? `${JSON.stringify({ entry, restored: o.versionId, versionId: id })}\n` : `restored ${entry} version ${o.versionId} (new version ${id})\n`);
    }
    const { offline, entryArg } = await offlineParts();
    return offline(o, async (g) => {
      const { bucket, key } = entryArg(entry);
      const id = await v.localRestore(g, bucket, key, o.versionId);
      process.stdout.write(`restored ${entry} version ${o.versionId} (new version ${id})\n`);
    });
  });
}

/** `ls … --versions` in either form (cli/versions.ts). */
async function lsVersions(bucket: string, remote: boolean, o: Both): Promise<void> {
  const v = await import('./versions.js');
  if (remote) {
    const { parseRemote } = await import('../transfer/location.js');
    const limit = o.limit === undefined ? Infinity : Number(o.limit);
    if (!Number.isInteger(limit) && limit !== Infinity) throw new Error(`--limit must be a positive integer, got ${JSON.stringify(o.limit)}`);
    if (limit < 1) throw new Error(`--limit must be a positive integer, got ${JSON.stringify(o.limit)}`);
    return v.remoteLsVersions(parseRemote(bucket), o.delimiter ?? '', o.json === true, limit);
  }
  const { offline } = await offlineParts();
  return offline(o, (g) => v.localLsVersions(g, bucket, o.prefix ?? '', o.delimiter ?? ''));
}
