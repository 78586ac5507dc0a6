/**
 * Command arguments naming where data is: `<remote>:<bucket>[/<prefix>]` or a local path. A text is remote when it
 * starts with `<name>:` where the name is a known remote (REMOTE_NAME); anything else is a local path (write `./a:b`
 * for a local file whose name has a colon). Keys map to local relative paths and back with `/` as the separator;
 * a key that cannot be a safe relative path (`..`, empty segments, a leading `/`, NUL) is refused, so a key never
 * writes outside the target directory.
 */
import { sep } from 'node:path';
import { TransferError } from './errors.js';
import { REMOTE_NAME } from './remotes.js';

/** A remote location: bucket and key prefix (possibly empty). */
export interface RemoteLocation {
  kind: 'remote';
  remote: string;
  bucket: string;
  prefix: string;
}

export interface LocalLocation {
  kind: 'local';
  path: string;
}

export type Location = RemoteLocation | LocalLocation;

/** Parses `<remote>:<bucket>[/<prefix>]` (remote names from `known`) or a local path. */
export function parseLocation(text: string, known: ReadonlySet<string>): Location {
  const colon = text.indexOf(':');
  if (colon > 0) {
    const name = text.slice(0, colon);
    if (REMOTE_NAME.test(name) && known.has(name)) return parseRemote(text);
  }
  return { kind: 'local', path: text };
}

/** Parses `<remote>:<bucket>[/<prefix>]`; throws a TransferError when it is not of that form. */
export function parseRemote(text: string): RemoteLocation {
  const m = /^([^:/]+):([^/]*)(?:\/(.*))?$/s.exec(text);
  if (!m || !m[2]) throw new TransferError(`${JSON.stringify(text)} is not <remote>:<bucket>[/<prefix>]`);
  return { kind: 'remote', remote: m[1]!, bucket: m[2], prefix: m[3] ?? '' };
}

/** `prefix` as a directory of keys: '' stays '', otherwise it ends with `/`. */
export function dirPrefix(prefix: string): string {
  return prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
}

/** A key relative to a directory prefix as a local relative path (native separators); throws when unsafe. */
export function keyToRelPath(rel: string): string {
  const segments = rel.split('/');
  if (rel === '' || segments.some((s) => s === '' || s === '.' || s === '..') || rel.includes('\0') || (sep === '\\' && rel.includes('\\'))) {
    throw new TransferError(`key part ${JSON.stringify(rel)} cannot be a local path`);
  }
  return segments.join(sep);
}

/** A local relative path as a key suffix (`/` separators). */
export function relPathToKey(rel: string): string {
  return rel.split(sep).join('/');
}
