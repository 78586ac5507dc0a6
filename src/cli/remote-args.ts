/**
 * Telling remote arguments from data-dir ones (light: no SDK loaded). An argument is remote when the text
 * before its first `:` names a known remote (`granary remote list`) and no `--data-dir`/`--metadata`/
 * `--create-data-dir` flag asks for the data dir. A data-dir entry (`<bucket>:<key>`) is addressed one way: with
 * the data dir chosen explicitly (those flags, or GRANARY_DATA_DIR/GRANARY_METADATA); otherwise a `<name>:` that
 * names no known remote is refused as an unknown remote.
 */
import { parseLocation } from '../transfer/location.js';
import { RemoteStore, unknownRemote, unknownRemoteName } from '../transfer/remotes.js';

/** Options the remote forms take (and the data-dir flags that rule them out). */
export interface RemoteOpts {
  json?: boolean;
  from?: string;
  force?: boolean;
  limit?: string;
  delimiter?: string;
  dataDir?: string;
  metadata?: string;
  createDataDir?: boolean;
}

/** Known remote names (empty when there is no profile file). */
export async function remoteNames(): Promise<Set<string>> {
  return new Set(Object.keys(await new RemoteStore().load()));
}

/**
 * Whether the data dir was chosen explicitly: a data-dir flag, or GRANARY_DATA_DIR / GRANARY_METADATA in the
 * environment. Without that, a `<name>:…` argument is never taken for a data-dir entry (see `checkRemoteNames`).
 */
export function dataDirChosen(o: RemoteOpts, env: NodeJS.ProcessEnv = process.env): boolean {
  return o.dataDir !== undefined || o.metadata !== undefined || o.createDataDir === true || !!env.GRANARY_DATA_DIR || !!env.GRANARY_METADATA;
}

/**
 * Refuses (`unknown remote`, naming the known remotes) an argument `<name>:…` whose name is not a known remote
 * when the data dir was not chosen explicitly: a mistyped remote (`hom:bucket`) must never reach the local data dir.
 */
export function checkRemoteNames(args: string[], names: ReadonlySet<string>, o: RemoteOpts): void {
  if (dataDirChosen(o)) return;
  for (const a of args) {
    const name = unknownRemoteName(a, names);
    if (name !== undefined) throw unknownRemote(name, names);
  }
}

/** Whether `text` is a remote argument for a command with options `o` (see the module comment). */
export function isRemoteArg(text: string, names: ReadonlySet<string>, o: RemoteOpts): boolean {
  if (o.dataDir !== undefined || o.metadata !== undefined || o.createDataDir) return false;
  return parseLocation(text, names).kind === 'remote';
}
