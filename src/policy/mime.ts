/**
 * MIME type of an upload (docs/development/kodo-protocol.md §3.1 `detectMime`, `mimeLimit`; §14 item 18): from the client, the file name,
 * the key or the content (magic numbers via `file-type`, plus a UTF-8 text heuristic).
 */
import mime from 'mime';
import { Errors } from '../errors.js';
import { extensionOf } from './filename.js';

/** The fallback type when nothing better is known. */
export const OCTET_STREAM = 'application/octet-stream';

/** Bytes of content `sniffContentMime` wants to see (file-type's sample size). */
export const SNIFF_BYTES = 4100;

/** Lower-cased type without parameters (`Text/Plain; charset=x` → `text/plain`). */
function baseType(type: string): string {
  return (type.split(';')[0] ?? '').trim().toLowerCase();
}

/** MIME type for the extension of `name`, or `undefined` (unknown, none, or one that only says octet-stream). */
function mimeFromName(name: string | undefined): string | undefined {
  const ext = extensionOf(name);
  if (!ext) return undefined;
  const type = mime.getType(ext.slice(1));
  return type && type !== OCTET_STREAM ? type : undefined;
}

/** True when `head` looks like text: no NUL byte and valid UTF-8 (a sequence cut at the end of `head` is allowed). */
function looksLikeText(head: Buffer): boolean {
  if (head.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/** Types that say "some text/markup" without saying which: an extension may name the format more precisely. */
const GENERIC_TEXT = new Set(['text/plain', 'application/xml']);

/** True for text-based formats (text/*, JSON, XML, JavaScript and friends). */
function isTextual(type: string): boolean {
  const t = baseType(type);
  return (
    t.startsWith('text/') ||
    /[/+](json|xml)$/.test(t) ||
    ['application/javascript', 'application/ecmascript', 'application/x-sh', 'application/toml', 'application/yaml',
      'application/x-yaml', 'application/sql', 'application/graphql'].includes(t)
  );
}

/** file-type, imported on first use (~90 ms with its dependencies): offline commands never sniff content. */
let fileType: Promise<typeof import('file-type')> | undefined;

/**
 * MIME type from the content alone. `head` is the first bytes of the content (at least `SNIFF_BYTES` when the
 * content is that long). Returns file-type's answer for known binary signatures, `'text/plain'` for non-empty
 * NUL-free valid UTF-8, else `undefined` (including for empty content).
 */
export async function sniffContentMime(head: Buffer): Promise<string | undefined> {
  if (head.length === 0) return undefined;
  const { fileTypeFromBuffer } = await (fileType ??= import('file-type'));
  const found = await fileTypeFromBuffer(head);
  if (found) return found.mime;
  return looksLikeText(head) ? 'text/plain' : undefined;
}

/** Input of `detectMimeType`. */
export interface DetectMimeInput {
  /** Policy `detectMime`: -1, 0 or 1 (other values behave as 0). */
  detectMime: number;
  /** MIME type the client sent (form part Content-Type, mkfile `mimeType`, v2 `mimeType`). */
  clientMime?: string;
  /** Original file name (`fname`). */
  fname?: string;
  /** Final key, when already known. */
  key?: string;
  /** First bytes of the content (≥ `SNIFF_BYTES` when available; empty for an empty object). */
  head: Buffer;
}

/**
 * The MIME type to store (docs/development/kodo-protocol.md §3.1 `detectMime`, §14 item 18):
 * - `-1`: the client's type verbatim, else `application/octet-stream`;
 * - `0` (default): the client's type unless absent or `application/octet-stream` (the Node SDK's default, treated as
 *   "unspecified"); then the `fname` extension → the `key` extension → the content;
 * - `1`: the content → the `fname` extension → the `key` extension. When the content is only known to be generic
 *   text (`text/plain`, `application/xml`) and the extension names a text format (`.json`, `.svg`, `.css`…), the
 *   extension's more precise type wins.
 * Final fallback `application/octet-stream`. Never throws.
 */
export async function detectMimeType(input: DetectMimeInput): Promise<string> {
  const client = input.clientMime?.trim() || undefined;
  if (input.detectMime === -1) return client ?? OCTET_STREAM;

  const byName = (): string | undefined => mimeFromName(input.fname) ?? mimeFromName(input.key);

  if (input.detectMime === 1) {
    const sniffed = await sniffContentMime(input.head);
    const named = byName();
    if (sniffed && !(GENERIC_TEXT.has(sniffed) && named && isTextual(named))) return sniffed;
    return named ?? sniffed ?? OCTET_STREAM;
  }

  if (client && baseType(client) !== OCTET_STREAM) return client;
  return byName() ?? (await sniffContentMime(input.head)) ?? OCTET_STREAM;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Does `type` (a bare `type/subtype`) match `pattern`, where `*` matches any run of characters? */
function matchesPattern(pattern: string, type: string): boolean {
  const source = pattern.split('*').map(escapeRegExp).join('.*');
  return new RegExp(`^${source}$`).test(type);
}

/**
 * Enforces `mimeLimit` (docs/development/kodo-protocol.md §3.1): a `;`-separated allow list with `*` wildcards (`image/*`,
 * `image/jpeg;image/png`), or, with a leading `!`, a deny list (`!application/json;text/plain`). Matching ignores
 * case and MIME parameters; empty entries are skipped; an unset or empty limit allows everything.
 *
 * Qiniu checks the type it sniffs from the content, not the client's claim: pass the result of
 * `detectMimeType({ ...input, detectMime: 1 })` rather than a client-supplied type.
 * @throws `Errors.limitedMimeType(type)` (403) when the type is not allowed.
 */
export function checkMimeLimit(mimeLimit: string | undefined, type: string): void {
  if (!mimeLimit) return;
  let spec = mimeLimit.trim();
  const deny = spec.startsWith('!');
  if (deny) spec = spec.slice(1);
  const patterns = spec
    .split(';')
    .map((p) => baseType(p.trim().replace(/^!/, '')))
    .filter((p) => p !== '');
  if (patterns.length === 0) return;
  const t = baseType(type);
  const hit = patterns.some((p) => matchesPattern(p, t));
  if (deny ? hit : !hit) throw Errors.limitedMimeType(type);
}
