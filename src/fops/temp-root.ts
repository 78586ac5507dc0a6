/**
 * Where fops keep their temp files: `<data dir>/fop-tmp/<process tag>.<random>/` (fops/execute.ts), also used
 * for a manifest object assembled into one file for a command that reads a path (objects/verified-read.ts `localManifestFile`).
 * A module of its own so that the read path does not load the fop runner.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** The directory of fop temp dirs; the dirs of processes that are gone are removed (`clearFopTemp`). */
export function fopTempRoot(dataDir: string): string {
  return join(dataDir, 'fop-tmp');
}

/**
 * A fresh path under the root for the process tagged `tag` (its `processTag`; 'offline' for the CLI):
 * `<root>/<tag>.<prefix><16 hex digits>`. `clearFopTemp` removes it only once that process is gone.
 */
export function fopTempPath(dataDir: string, tag: string | undefined, prefix = ''): string {
  return join(fopTempRoot(dataDir), `${tag ?? 'offline'}.${prefix}${randomBytes(8).toString('hex')}`);
}
