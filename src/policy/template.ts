/**
 * Magic and custom variables (docs/development/kodo-protocol.md §3.2) and the three ways a put-policy template is rendered (§3.3):
 * JSON (`returnBody`, JSON `callbackBody`), form (`callbackBody` default) and plain (`saveKey`).
 *
 * Placeholders are `$(name)`, `$(name.field.sub)` and `$(x:custom)`; Qiniu's docs also allow `${name}`, which is
 * accepted too. Variables are looked up in a table of synchronous resolver functions (`UPLOAD_VARIABLES`,
 * `SAVE_KEY_VARIABLES`): to add a variable (e.g. `imageInfo`, `exif`, `avinfo`), compute its value before rendering,
 * carry it in the vars object and add one resolver entry. A resolver may return an object; `.field` paths walk into
 * it. Unknown or unavailable variables render as `null` (bare JSON value) or `""` (everywhere else).
 */
import { randomUUID } from 'node:crypto';
import mime from 'mime';
import { Errors } from '../errors.js';
import { extensionOf, stripExtension } from './filename.js';

/**
 * What is known when the key is resolved (docs/development/kodo-protocol.md §3.1 key resolution): the body is already staged, so its
 * etag, size and MIME type are known, but the key is not.
 */
export interface SaveKeyVars {
  /** Target bucket (`$(bucket)`). */
  bucket: string;
  /** Original file name (`$(fname)`; also the source of `$(ext)` and `$(fprefix)`); `""` when unknown. */
  fname: string;
  /** Qiniu etag of the content (`$(etag)`, alias `$(hash)`). */
  etag: string;
  /** Content size in bytes (`$(fsize)`, rendered as a JSON number). */
  fsize: number;
  /** Final MIME type (`$(mimeType)`; fallback source of `$(ext)`). */
  mimeType: string;
  /** Policy `endUser` (`$(endUser)`). */
  endUser?: string;
  /** Custom variables sent with the request, keyed with their prefix: `'x:name'` → value (`$(x:name)`). */
  custom: Record<string, string>;
  /** Upload time, Unix milliseconds (source of the saveKey-only time variables, Beijing time). */
  putTimeMs: number;
}

/** Everything known once the object is stored: the vars of `returnBody` and `callbackBody`. */
export interface UploadVars extends SaveKeyVars {
  /** Final key (`$(key)`). */
  key: string;
  /** Id of the job started by `persistentOps` (`$(persistentId)`). */
  persistentId?: string;
  /**
   * Source of `$(uuid)` (default `crypto.randomUUID`). Called at most once per render; pass a function returning a
   * fixed value to get the same UUID in `returnBody` and `callbackBody`.
   */
  uuid?: () => string;
  /** Hex SHA-1 of the callback body (`$(bodySha1)`, callback only). */
  bodySha1?: string;
}

/** Computes the value of one variable from the vars; `undefined` means unknown/unavailable. Must be synchronous. */
export type VariableResolver<V> = (vars: V) => unknown;

/** A variable table: root name (the part before the first `.`) → resolver. */
export type VariableTable<V> = Readonly<Record<string, VariableResolver<V>>>;

/** Extension with leading dot for a MIME type (`image/jpeg` → `.jpg`); `""` for octet-stream or unknown types. */
function extensionForMime(mimeType: string): string {
  const base = (mimeType.split(';')[0] ?? '').trim().toLowerCase();
  if (!base || base === 'application/octet-stream') return '';
  const ext = mime.getExtension(base);
  return ext ? `.${ext}` : '';
}

const pad2 = (n: number): string => String(n).padStart(2, '0');
const BEIJING_OFFSET_MS = 8 * 3600 * 1000;

/** Calendar fields of `ms` in Beijing time (UTC+8, no DST), zero-padded (`year` 4 digits, others 2). */
function beijingTime(ms: number): { year: string; mon: string; day: string; hour: string; min: string; sec: string } {
  const d = new Date(ms + BEIJING_OFFSET_MS);
  return {
    year: String(d.getUTCFullYear()).padStart(4, '0'),
    mon: pad2(d.getUTCMonth() + 1),
    day: pad2(d.getUTCDate()),
    hour: pad2(d.getUTCHours()),
    min: pad2(d.getUTCMinutes()),
    sec: pad2(d.getUTCSeconds()),
  };
}

/** Variables valid in every template. */
const COMMON_VARIABLES: VariableTable<SaveKeyVars> = {
  bucket: (v) => v.bucket,
  etag: (v) => v.etag,
  hash: (v) => v.etag, // undocumented alias, harmless (§3.2)
  fname: (v) => v.fname,
  fprefix: (v) => stripExtension(v.fname),
  fsize: (v) => v.fsize,
  mimeType: (v) => v.mimeType,
  endUser: (v) => v.endUser,
};

/**
 * Variables of `returnBody` / `callbackBody` (docs/development/kodo-protocol.md §3.2). Time variables are saveKey-only and are absent here.
 * `$(ext)`: extension with leading dot from `fname`, else from `key`, else from `mimeType`.
 */
export const UPLOAD_VARIABLES: VariableTable<UploadVars> = {
  ...COMMON_VARIABLES,
  key: (v) => v.key,
  ext: (v) => extensionOf(v.fname) || extensionOf(v.key) || extensionForMime(v.mimeType),
  persistentId: (v) => v.persistentId,
  uuid: (v) => (v.uuid ?? randomUUID)(),
  bodySha1: (v) => v.bodySha1,
};

/**
 * Variables of `saveKey` (docs/development/kodo-protocol.md §3.2): no `key`, `uuid`, `persistentId` or `bodySha1`; adds the Beijing-time
 * `year mon day hour min sec`. `$(ext)`: from `fname`, else from `mimeType`.
 */
export const SAVE_KEY_VARIABLES: VariableTable<SaveKeyVars> = {
  ...COMMON_VARIABLES,
  ext: (v) => extensionOf(v.fname) || extensionForMime(v.mimeType),
  year: (v) => beijingTime(v.putTimeMs).year,
  mon: (v) => beijingTime(v.putTimeMs).mon,
  day: (v) => beijingTime(v.putTimeMs).day,
  hour: (v) => beijingTime(v.putTimeMs).hour,
  min: (v) => beijingTime(v.putTimeMs).min,
  sec: (v) => beijingTime(v.putTimeMs).sec,
};

/** `$(name)` or `${name}`; group 1 or 2 is the name. */
const PLACEHOLDER_SOURCE = String.raw`\$(?:\(([^()]*)\)|\{([^{}]*)\})`;
const PLACEHOLDER_AT = new RegExp(PLACEHOLDER_SOURCE, 'y');
const PLACEHOLDER_ALL = new RegExp(PLACEHOLDER_SOURCE, 'g');

/** Looks variable names up in `table`, once per name per render (so `$(uuid)` is stable within one template). */
function makeLookup<V extends SaveKeyVars>(table: VariableTable<V>, vars: V): (name: string) => unknown {
  const cache = new Map<string, unknown>();
  return (rawName) => {
    const name = rawName.trim();
    if (cache.has(name)) return cache.get(name);
    let value: unknown;
    if (name.startsWith('x:')) {
      value = Object.hasOwn(vars.custom, name) ? vars.custom[name] : undefined;
    } else {
      const [root = '', ...path] = name.split('.');
      const resolver = Object.hasOwn(table, root) ? table[root] : undefined;
      value = resolver ? resolver(vars) : undefined;
      for (const field of path) {
        if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, field)) {
          value = undefined;
          break;
        }
        value = (value as Record<string, unknown>)[field];
      }
    }
    cache.set(name, value);
    return value;
  };
}

/** Plain text of a value: strings verbatim, numbers/booleans via `String`, objects as JSON, missing → `""`. */
function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

/** JSON encoding of a value standing alone as a JSON value: missing → `null`. */
function asJsonValue(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? 'null';
}

/** JSON-escaped text for use inside a quoted JSON string (no surrounding quotes). */
function asJsonStringContent(value: unknown): string {
  return JSON.stringify(asText(value)).slice(1, -1);
}

/**
 * Substitutes placeholders in a JSON template, tracking whether each one sits inside a quoted string (→ escaped
 * raw text) or stands alone as a value (→ JSON encoding). Does not validate the result.
 */
function substituteJson(tpl: string, lookup: (name: string) => unknown): string {
  let out = '';
  let inString = false;
  let escaped = false;
  let i = 0;
  while (i < tpl.length) {
    const ch = tpl.charAt(i);
    if (ch === '$' && !escaped) {
      PLACEHOLDER_AT.lastIndex = i;
      const m = PLACEHOLDER_AT.exec(tpl);
      if (m) {
        const value = lookup(m[1] ?? m[2] ?? '');
        out += inString ? asJsonStringContent(value) : asJsonValue(value);
        i += m[0].length;
        continue;
      }
    }
    out += ch;
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    }
    i += 1;
  }
  return out;
}

/**
 * Renders a JSON template (`returnBody`, or `callbackBody` with `callbackBodyType: application/json`), docs/development/kodo-protocol.md
 * §3.3. A placeholder standing alone as a JSON value becomes the JSON encoding of the value (strings quoted, numbers
 * raw, objects as JSON, missing → `null`); inside a quoted string it becomes JSON-escaped raw text (missing → `""`).
 * So the Node SDK's `{"key":$(key),"fsize":$(fsize)}` gives `{"key":"k","fsize":3}`.
 *
 * @param field name used in the error message (default `'returnBody'`).
 * @returns the rendered text (the template's own formatting kept).
 * @throws `Errors.badPutPolicy` (400) when the result is not valid JSON.
 */
export function renderJsonTemplate(tpl: string, vars: UploadVars, field = 'returnBody'): string {
  const out = renderJsonTemplateText(tpl, vars);
  if (!isJsonText(out)) throw Errors.badPutPolicy(`${field} is not valid JSON after rendering`);
  return out;
}

/**
 * Renders a JSON template as `renderJsonTemplate` does, without requiring the result to be JSON: `returnBody` is
 * answered as rendered even when it is not JSON (Kodo stores the object and answers the text; the Python SDK's
 * tests use `returnBody: " "`).
 */
export function renderJsonTemplateText(tpl: string, vars: UploadVars): string {
  return substituteJson(tpl, makeLookup(UPLOAD_VARIABLES, vars));
}

/** `true` when `text` parses as JSON. */
export function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Sample vars used to check a JSON template's shape before any upload happens (values of the real types). */
const SAMPLE_UPLOAD_VARS: UploadVars = {
  bucket: 'bucket',
  key: 'key',
  etag: 'etag',
  fname: 'file.bin',
  fsize: 0,
  mimeType: 'application/octet-stream',
  custom: {},
  putTimeMs: 0,
  uuid: () => '00000000-0000-0000-0000-000000000000',
};

/**
 * Checks at policy-parse time that a JSON template will render to valid JSON (rendering is value-independent for
 * well-formed templates, so sample values suffice). Throws `Errors.badPutPolicy` (400) naming `field`.
 */
export function validateJsonTemplate(tpl: string, field: string): void {
  renderJsonTemplate(tpl, SAMPLE_UPLOAD_VARS, field);
}

/**
 * Renders a form template (`callbackBody`, default `application/x-www-form-urlencoded`), docs/development/kodo-protocol.md §3.3: every
 * substituted value is `encodeURIComponent`-encoded (missing → `""`, objects as JSON text), literal text kept as is.
 */
export function renderFormTemplate(tpl: string, vars: UploadVars): string {
  const lookup = makeLookup(UPLOAD_VARIABLES, vars);
  return tpl.replace(PLACEHOLDER_ALL, (_m, a: string | undefined, b: string | undefined) =>
    encodeURIComponent(asText(lookup(a ?? b ?? ''))),
  );
}

/**
 * Renders `saveKey` (docs/development/kodo-protocol.md §3.1, §3.3): plain substitution, no escaping, missing → `""`. Time variables
 * `$(year) $(mon) $(day) $(hour) $(min) $(sec)` are the upload time in Beijing time (UTC+8), zero-padded.
 * `$(key)`, `$(uuid)`, `$(persistentId)` are not available here and render empty.
 */
export function renderSaveKey(tpl: string, vars: SaveKeyVars): string {
  const lookup = makeLookup(SAVE_KEY_VARIABLES, vars);
  return tpl.replace(PLACEHOLDER_ALL, (_m, a: string | undefined, b: string | undefined) =>
    asText(lookup(a ?? b ?? '')),
  );
}

/**
 * Names of the variables a template refers to, trimmed, in order of first appearance (`'x:foo'`, `'imageInfo.width'`).
 * Lets callers skip computing expensive variables a template does not use.
 */
export function referencedVariables(tpl: string): string[] {
  const names = new Set<string>();
  for (const m of tpl.matchAll(PLACEHOLDER_ALL)) names.add((m[1] ?? m[2] ?? '').trim());
  return [...names];
}
