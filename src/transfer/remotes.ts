/**
 * Remote profiles of the transfer CLI (`granary remote add|list|remove`): a named Kodo endpoint — a Granary server
 * or Qiniu's cloud — with its key pair and how to find its hosts (docs/development/kodo-protocol.md §1.1–1.3).
 *
 * Stored as JSON in `$GRANARY_CONFIG_DIR/remotes.json` (default `~/.config/granary/remotes.json`), the file mode
 * 0600 and the directory 0700, since it holds SecretKeys. Written to a temp name and renamed, so a crash never
 * leaves half a file. Changes (`put`, `remove`) read, change and write the file holding the lock file
 * `remotes.json.lock` (transfer/file-lock.ts), so concurrent `granary remote add` runs each keep their remote.
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { TransferError } from './errors.js';
import { withFileLock } from './file-lock.js';

/** One remote. Hosts are `host[:port]` (no scheme); `https` picks the scheme for every host. */
export interface RemoteProfile {
  name: string;
  accessKey: string;
  secretKey: string;
  /** Region discovery host (`/v4/query`, docs/development/kodo-protocol.md §1.2); default `uc.qiniuapi.com` when no region is given. */
  ucHost?: string;
  /** Kodo region id (z0, z1, z2, na0, as0, …): Qiniu's standard hosts of that region, unless hosts are given. */
  region?: string;
  upHost?: string;
  ioHost?: string;
  rsHost?: string;
  rsfHost?: string;
  apiHost?: string;
  /** The S3 listener (host[:port]) of a Granary remote: versions (ls --versions, restore, bucket versioning) use it. */
  s3Host?: string;
  https?: boolean;
}

/** Names of remotes: letters, digits, `_`, `-`, `.`; 1–64 characters (the text before `:` in `<remote>:<bucket>`). */
export const REMOTE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** The error for a remote name that is not in the profile store: names it, the known remotes and how to add one. */
export function unknownRemote(name: string, known: Iterable<string>): TransferError {
  const names = [...known].sort();
  const list = names.length === 0 ? 'no remote is configured' : `known remotes: ${names.join(', ')}`;
  return new TransferError(`unknown remote ${JSON.stringify(name)} (${list}; add one with: granary remote add ${name} --ak … --sk …)`);
}

/**
 * The name of `text`'s `<name>:` prefix when it has the form of a remote name that `known` lacks (a mistyped
 * remote); undefined otherwise.
 */
export function unknownRemoteName(text: string, known: ReadonlySet<string>): string | undefined {
  const colon = text.indexOf(':');
  const name = colon > 0 ? text.slice(0, colon) : '';
  return REMOTE_NAME.test(name) && !known.has(name) ? name : undefined;
}

/** The configuration directory: `$GRANARY_CONFIG_DIR`, else `~/.config/granary`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.GRANARY_CONFIG_DIR && env.GRANARY_CONFIG_DIR !== '' ? env.GRANARY_CONFIG_DIR : join(homedir(), '.config', 'granary');
}

/** The profile store over `remotes.json` in a configuration directory. */
export class RemoteStore {
  constructor(readonly dir: string = configDir()) {}

  get file(): string {
    return join(this.dir, 'remotes.json');
  }

  /** Every remote, by name (an absent file is an empty store; an unreadable or malformed one throws). */
  async load(): Promise<Record<string, RemoteProfile>> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new TransferError(`cannot read ${this.file}: ${(err as Error).message}`);
    }
    try {
      const parsed = JSON.parse(text) as { remotes?: Record<string, RemoteProfile> };
      return parsed.remotes ?? {};
    } catch {
      throw new TransferError(`${this.file} is not valid JSON`);
    }
  }

  /** The remote called `name`; throws `unknownRemote` (naming the known remotes) when there is none. */
  async get(name: string): Promise<RemoteProfile> {
    const all = await this.load();
    const p = all[name];
    if (!p) throw unknownRemote(name, Object.keys(all));
    return p;
  }

  /** Adds or replaces a remote (under the lock; a TransferError when it stays taken for 10 s). */
  async put(profile: RemoteProfile): Promise<void> {
    if (!REMOTE_NAME.test(profile.name)) throw new TransferError(`bad remote name ${JSON.stringify(profile.name)} (letters, digits, _ . -)`);
    await this.change((all) => {
      all[profile.name] = profile;
      return true;
    });
  }

  /** Removes a remote; false when there was none (under the lock, as `put`). */
  async remove(name: string): Promise<boolean> {
    return this.change((all) => {
      if (!all[name]) return false;
      delete all[name];
      return true;
    });
  }

  /**
   * Reads the remotes, lets `edit` change them in place and writes them when it answers true, holding the lock file
   * throughout (the directory is made first, 0700, to hold it). Answers `edit`'s answer.
   */
  private async change(edit: (all: Record<string, RemoteProfile>) => boolean): Promise<boolean> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    return withFileLock(`${this.file}.lock`, async () => {
      const all = await this.load();
      if (!edit(all)) return false;
      await this.save(all);
      return true;
    });
  }

  /** Writes the remotes to a temp file (0600) renamed over remotes.json (the directory exists: `change`). */
  private async save(all: Record<string, RemoteProfile>): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ remotes: all }, null, 2)}\n`, { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, this.file);
  }
}
