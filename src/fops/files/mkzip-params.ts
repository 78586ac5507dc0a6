/**
 * The parameters of `mkzip` (docs/development/kodo-protocol.md §10.9), parsed without I/O:
 *
 * - `mkzip/2[/encoding/<b64>]/url/<b64>[/alias/<b64>]/url/…` — the URLs in the command itself; Kodo bounds
 *   the command text at 2,048 bytes (`MODE2_MAX_CHARS`), and Granary also at GRANARY_MKZIP_MAX_FILES URLs.
 * - `mkzip/4[/encoding/<b64>]` — the source object is an index file: one `/url/<b64>[/alias/<b64>]` per line
 *   (blank lines ignored), at most GRANARY_MKZIP_MAX_FILES lines (`parseIndexFile`, when the job runs).
 *
 * Every value is URL-safe base64 (padding optional). `encoding` is `utf-8` (also `utf8`, the default) or `gbk`.
 * An alias is the entry's name in the archive (`dir/name` makes a directory); without one the name is the
 * entry's key for a URL of the source's bucket, else the URL's path (percent-decoded, without the leading `/`). Names are checked: no empty, absolute or `..` names (400).
 * Errors are 400 `mkzip: <what is wrong>`.
 */
import { urlsafeB64Decode, urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors, isKodoError } from '../../errors.js';
import type { ZipNameEncoding } from './zip-writer.js';

/** Kodo's bound on the text of a mode-2 command (its `mkzip/2/…` arguments), bytes. */
export const MODE2_MAX_CHARS = 2048;

/**
 * One file to archive: where its bytes are and its name in the archive — the alias when given; otherwise the
 * entry's key for a URL of the source's bucket, or the URL's path (`fallbackName`) for any other URL.
 */
export interface ZipItem {
  url: string;
  alias?: string;
  fallbackName: string;
}

export type MkzipParams = { mode: 2; encoding: ZipNameEncoding; items: ZipItem[] } | { mode: 4; encoding: ZipNameEncoding };

const bad = (what: string): never => {
  throw Errors.badRequest(`mkzip: ${what}`);
};

/** Decodes one base64 value as UTF-8 text (400 naming the parameter). */
function text(param: string, v: string): string {
  try {
    return urlsafeB64DecodeText(v);
  } catch (err) {
    if (isKodoError(err)) return bad(`${param} is not URL-safe base64 of UTF-8 text`);
    throw err;
  }
}

/** The encoding named by a base64 value. */
function encodingOf(v: string): ZipNameEncoding {
  let name: string;
  try {
    name = urlsafeB64Decode(v).toString('latin1').trim().toLowerCase();
  } catch {
    return bad('encoding is not URL-safe base64');
  }
  if (name === 'utf-8' || name === 'utf8') return 'utf-8';
  if (name === 'gbk') return 'gbk';
  return bad(`encoding must be utf-8 or gbk, got ${JSON.stringify(name)}`);
}

/** The default name of a URL's resource: its path, percent-decoded, without the leading `/`. */
export function defaultName(url: string): string {
  let path: string;
  try {
    path = decodeURIComponent(new URL(url).pathname);
  } catch {
    return bad(`url ${JSON.stringify(url)} is not an http(s) URL`);
  }
  return path.replace(/^\/+/, '');
}

/** Checks an entry name (400 on an empty, absolute or `..` name). */
export function checkName(name: string): string {
  const n = name.replace(/\\/g, '/');
  if (n === '' || n.endsWith('/')) bad(`entry name ${JSON.stringify(name)} is empty or ends with /`);
  if (n.startsWith('/') || /^[a-zA-Z]:/.test(n) || n.split('/').includes('..')) bad(`entry name ${JSON.stringify(name)} is not a relative path`);
  if (Buffer.byteLength(n) > 0xffff) bad('entry name too long');
  return n;
}

/** Parses `url`/`alias`/`encoding` pairs (the part after the mode) into items; `encoding` may appear once. */
function parsePairs(args: string[], where: string): { encoding?: ZipNameEncoding; items: ZipItem[] } {
  if (args.length % 2 !== 0) bad(`${where}: parameters come in name/value pairs`);
  const items: ZipItem[] = [];
  let encoding: ZipNameEncoding | undefined;
  let pending: { url: string; alias?: string } | undefined;
  const flush = (): void => {
    if (!pending) return;
    const { url, alias } = pending;
    items.push({ url, ...(alias !== undefined ? { alias: checkName(alias) } : {}), fallbackName: checkName(defaultName(url)) });
    pending = undefined;
  };
  for (let i = 0; i < args.length; i += 2) {
    const k = args[i]!;
    const v = args[i + 1]!;
    if (k === 'url') {
      flush();
      const url = text('url', v);
      if (!/^https?:\/\//i.test(url)) bad(`url ${JSON.stringify(url)} is not an http(s) URL`);
      pending = { url };
    } else if (k === 'alias') {
      if (!pending || pending.alias !== undefined) bad(`${where}: alias must follow its url`);
      pending!.alias = text('alias', v);
    } else if (k === 'encoding') {
      if (encoding !== undefined) bad('encoding given twice');
      encoding = encodingOf(v);
    } else bad(`${where}: unknown parameter ${JSON.stringify(k)}`);
  }
  flush();
  return { ...(encoding ? { encoding } : {}), items };
}

/** Parses the arguments after `mkzip` (see the module comment). */
export function parseMkzip(args: string[]): MkzipParams {
  const [mode, ...rest] = args;
  if (mode === '2') {
    if (args.join('/').length > MODE2_MAX_CHARS) bad(`mode 2 arguments exceed ${MODE2_MAX_CHARS} bytes; use mode 4 with an index file`);
    const { encoding, items } = parsePairs(rest, 'mode 2');
    if (items.length === 0) bad('mode 2 needs at least one url');
    return { mode: 2, encoding: encoding ?? 'utf-8', items };
  }
  if (mode === '4') {
    const { encoding, items } = parsePairs(rest, 'mode 4');
    if (items.length > 0) bad('mode 4 takes its urls from the index file (the source object), not from the command');
    return { mode: 4, encoding: encoding ?? 'utf-8' };
  }
  return bad(`mode must be 2 or 4, got ${JSON.stringify(mode ?? '')}`);
}

/**
 * The items of a mode-4 index file: one `/url/<b64>[/alias/<b64>]` per line (CRLF or LF; blank lines skipped).
 * 400 naming the line on a bad line; 400 when there are none or more than `maxFiles`.
 */
export function parseIndexFile(body: Buffer, maxFiles: number): ZipItem[] {
  const items: ZipItem[] = [];
  const lines = body.toString('utf8').split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '') continue;
    const parts = line.replace(/^\/+/, '').replace(/\/+$/, '').split('/');
    const parsed = parsePairs(parts, `index line ${i + 1}`);
    if (parsed.encoding !== undefined || parsed.items.length !== 1) bad(`index line ${i + 1}: expected /url/<b64>[/alias/<b64>]`);
    items.push(parsed.items[0]!);
    if (items.length > maxFiles) bad(`the index file lists more than ${maxFiles} urls (GRANARY_MKZIP_MAX_FILES)`);
  }
  if (items.length === 0) bad('the index file lists no url');
  return items;
}
