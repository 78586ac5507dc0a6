/**
 * Telling remote arguments from data-dir ones (light: no SDK loaded). An argument is remote when the text
 * before its first `:` names a known remote (`granary remote list`) and no `--data-dir`/`--metadata`/
 * `--create-data-dir` flag asks for the data dir.
 */
import { parseLocation } from '../transfer/location.js';
import { RemoteStore } from '../transfer/remotes.js';

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

/** Whether `text` is a remote argument for a command with options `o` (see the module comment). */
export function isRemoteArg(text: string, names: ReadonlySet<string>, o: RemoteOpts): boolean {
  if (o.dataDir !== undefined || o.metadata !== undefined || o.createDataDir) return false;
  return parseLocation(text, names).kind === 'remote';
}
