/**
 * Verification of management-API requests signed with `Authorization: QBox <ak>:<sign>` (docs/development/kodo-protocol.md §2.2) or
 * `Authorization: Qiniu <ak>:<sign>` (§2.3), including the `X-Qiniu-Date` freshness check (§2.3, §14 item 14).
 *
 * A request is accepted when ANY candidate signed string matches (§2.3 "Recommended server verification"):
 * the Host header as received and, when it carries a port, the Node SDK's doubled-port form `h:p:p` (§14 item 1);
 * the Node and the Go body-inclusion rules; for `QBox` the body when form-urlencoded and also no body.
 * The request-target is signed exactly as received, never re-encoded (§14 item 23).
 */
import { Errors } from '../errors.js';
import { hmacSign } from './base64.js';
import { sameSignature } from './compare.js';
import { FORM_TYPE, JSON_TYPE, type HeaderMap, headerValue, mediaType } from './headers.js';

/** What the verifier needs from an HTTP request (no framework types). */
export interface SignedRequest {
  /** HTTP method, e.g. `GET`. */
  method: string;
  /** Request-target exactly as received: raw path + optional `?` + raw query (never re-encoded). */
  rawUrl: string;
  /** Node `IncomingHttpHeaders`: lower-case names; includes `host`. */
  headers: HeaderMap;
  /** Raw body bytes when the route read them; `undefined` when not read (then only body-less candidates are tried). */
  body: Buffer | undefined;
  /**
   * Every value of each header, in order (Node's `headersDistinct`): a repeated `X-Qiniu-*` header is signed
   * differently by each SDK. Optional: without it, `headers` is used (a repeated header joined with `, `).
   */
  distinctHeaders?: Record<string, string[] | undefined>;
}

/** Returns the SecretKey of an AccessKey, or `undefined` when the AccessKey is unknown. */
export type SecretLookup = (accessKey: string) => string | undefined;

/** The authenticated caller. */
export interface Caller {
  accessKey: string;
  scheme: 'QBox' | 'Qiniu';
}

const OCTET_TYPE = 'application/octet-stream';
const X_QINIU = 'X-Qiniu-';
const TOKEN_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const QINIU_DATE = /^\d{8}T\d{6}Z$/;

/**
 * Verifies the `Authorization` header of a management request and returns the caller.
 *
 * `nowMs` is the current time in milliseconds; `opts.dateWindowSeconds` (default 900) is the allowed skew of an
 * `X-Qiniu-Date` header (`YYYYMMDDTHHmmssZ`, UTC), checked only after the signature verified.
 *
 * Throws (KodoError): 401 `tokenMissing` when there is no Authorization header; 401 `badToken` for an unknown
 * scheme, malformed credentials or a signature mismatch; 401 `unknownAccessKey`; 403 `staleDate` when
 * `X-Qiniu-Date` is present but unparsable or outside the window.
 */
export function verifyManagement(
  req: SignedRequest,
  secretOf: SecretLookup,
  nowMs: number,
  opts: { dateWindowSeconds?: number } = {},
): Caller {
  const header = headerValue(req.headers, 'authorization')?.trim();
  if (!header) throw Errors.tokenMissing();
  const { scheme, accessKey, sign } = parseAuthorization(header);
  const secret = secretOf(accessKey);
  if (secret === undefined) throw Errors.unknownAccessKey();

  const candidates = scheme === 'QBox' ? qboxCandidates(req) : qiniuCandidates(req);
  if (!candidates.some((data) => sameSignature(sign, hmacSign(secret, data)))) {
    throw Errors.badToken('signature mismatch');
  }
  checkQiniuDate(req.headers, nowMs, opts.dateWindowSeconds ?? 900);
  return { accessKey, scheme };
}

/** Splits `<Scheme> <ak>:<sign>`; the scheme is matched case-insensitively. Throws 401 `badToken`. */
function parseAuthorization(header: string): { scheme: Caller['scheme']; accessKey: string; sign: string } {
  const m = /^(\S+)\s+(\S+)$/.exec(header);
  if (!m) throw Errors.badToken('malformed Authorization header');
  const word = m[1]!.toLowerCase();
  const scheme = word === 'qbox' ? 'QBox' : word === 'qiniu' ? 'Qiniu' : undefined;
  if (!scheme) throw Errors.badToken('unsupported authorization scheme');
  const creds = m[2]!;
  const colon = creds.indexOf(':');
  if (colon <= 0 || colon === creds.length - 1) throw Errors.badToken('malformed credentials');
  return { scheme, accessKey: creds.slice(0, colon), sign: creds.slice(colon + 1) };
}

/** §2.2: `<target>\n` plus the body when form-urlencoded; the body-less form is always a candidate. */
function qboxCandidates(req: SignedRequest): Buffer[] {
  const head = Buffer.from(`${req.rawUrl}\n`, 'utf8');
  const body = req.body;
  const withBody = body && body.length > 0 && mediaType(headerValue(req.headers, 'content-type')) === FORM_TYPE;
  return withBody ? [head, Buffer.concat([head, body])] : [head];
}

/**
 * §2.3: every (host × Content-Type line × X-Qiniu lines × body) combination of the v2 signed string.
 * Without a Content-Type header the SDKs differ: Go and Node sign `Content-Type: application/x-www-form-urlencoded`;
 * Java leaves the line out and signs no body (util/Auth.java `signQiniuAuthorization`; its `GET /list`).
 */
function qiniuCandidates(req: SignedRequest): Buffer[] {
  const contentType = headerValue(req.headers, 'content-type');
  const variants: Array<{ typeLine: string[]; bodies: Buffer[] }> = [
    { typeLine: [`Content-Type: ${contentType || FORM_TYPE}`], bodies: bodyCandidates(req.body, contentType) },
  ];
  if (!contentType) variants.push({ typeLine: [], bodies: [Buffer.alloc(0)] });
  const out: Buffer[] = [];
  for (const host of hostCandidates(headerValue(req.headers, 'host') ?? '')) {
    for (const { typeLine, bodies } of variants) {
      for (const xLines of xQiniuLineSets(req)) {
        const lines = [`${req.method.toUpperCase()} ${req.rawUrl}`, `Host: ${host}`, ...typeLine, ...xLines];
        const head = Buffer.from(`${lines.join('\n')}\n\n`, 'utf8');
        for (const body of bodies) out.push(body.length > 0 ? Buffer.concat([head, body]) : head);
      }
    }
  }
  return out;
}

/** The Host header, plus `host:port:port` when it has a port (Node SDK bug, §2.3 / §14 item 1). */
function hostCandidates(host: string): string[] {
  const port = /:(\d+)$/.exec(host)?.[1];
  return port ? [host, `${host}:${port}`] : [host];
}

/**
 * Body variants of a v2 signature. Node: the body whenever non-empty and the Content-Type is not
 * `application/octet-stream` (concatenated as a JS string, i.e. after a UTF-8 round trip). Go: the raw body only
 * when the Content-Type (default form) is exactly form-urlencoded or JSON. Deduplicated.
 */
function bodyCandidates(body: Buffer | undefined, contentType: string | undefined): Buffer[] {
  const none = Buffer.alloc(0);
  if (!body || body.length === 0) return [none];
  const node = contentType !== OCTET_TYPE ? Buffer.from(body.toString('utf8'), 'utf8') : none;
  const effective = contentType || FORM_TYPE;
  const go = effective === FORM_TYPE || effective === JSON_TYPE ? body : none;
  return node.equals(go) ? [node] : [node, go];
}

/**
 * The X-Qiniu lines the SDKs may have signed (§2.3): `<Canonical-Name>: <value>` for every header whose canonical
 * name starts with `X-Qiniu-` and is longer than that prefix, sorted by name then value. A header sent more than
 * once is signed differently by each SDK: Go signs its first value only (auth/credentials.go `collectDataV2`,
 * `req.Header.Get`), an okhttp-style header map its last, and one line per value is the plain reading — one set of
 * lines per reading, deduplicated (one set when no header repeats).
 */
function xQiniuLineSets(req: SignedRequest): string[][] {
  const values = new Map<string, string[]>();
  const source = req.distinctHeaders ?? req.headers;
  for (const [name, value] of Object.entries(source)) {
    const canonical = canonicalHeaderName(name);
    if (value === undefined || !canonical.startsWith(X_QINIU) || canonical.length <= X_QINIU.length) continue;
    values.set(canonical, [...(values.get(canonical) ?? []), ...(Array.isArray(value) ? value : [value])]);
  }
  const lines = (pick: (vs: string[]) => string[]): string[] => {
    const items: Array<[string, string]> = [];
    for (const [name, vs] of values) for (const v of pick(vs)) items.push([name, v]);
    items.sort((a, b) => cmp(a[0], b[0]) || cmp(a[1], b[1]));
    return items.map(([n, v]) => `${n}: ${v}`);
  };
  const all = lines((vs) => vs);
  if (![...values.values()].some((vs) => vs.length > 1)) return [all];
  const sets = [all, lines((vs) => vs.slice(0, 1)), lines((vs) => vs.slice(-1)), lines((vs) => [vs.join(', ')])];
  const seen = new Set<string>();
  return sets.filter((set) => {
    const k = set.join('\n');
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** MIME canonical form (`x-qIniu-aAa` → `X-Qiniu-Aaa`); names with non-token characters are left as they are. */
function canonicalHeaderName(name: string): string {
  if (!TOKEN_NAME.test(name)) return name;
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1).toLowerCase())
    .join('-');
}

/** 403 `staleDate` when `X-Qiniu-Date` is present and unparsable or more than `windowSeconds` away from now. */
function checkQiniuDate(headers: HeaderMap, nowMs: number, windowSeconds: number): void {
  const raw = headerValue(headers, 'x-qiniu-date');
  if (raw === undefined) return;
  const at = parseQiniuDate(raw.trim());
  if (at === undefined || Math.abs(nowMs - at) > windowSeconds * 1000) throw Errors.staleDate();
}

/** `YYYYMMDDTHHmmssZ` (UTC) → epoch milliseconds; `undefined` unless it names a real instant. */
function parseQiniuDate(text: string): number | undefined {
  if (!QINIU_DATE.test(text)) return undefined;
  const n = (from: number, to: number): number => Number(text.slice(from, to));
  const ms = Date.UTC(n(0, 4), n(4, 6) - 1, n(6, 8), n(9, 11), n(11, 13), n(13, 15));
  const back = new Date(ms).toISOString().slice(0, 19).replace(/[-:]/g, '') + 'Z';
  return back === text ? ms : undefined;
}
