/**
 * Canonical response header names. Kodo is a Go service: every header it sends goes out in Go's canonical form
 * (`X-Reqid`, `X-Log`, `X-Qn-Meta-M1`, `Content-Type`, `Etag`), and the PHP SDK reads response headers by exact
 * name (Http/Response.php: `$this->headers['X-Reqid']`, `['X-Log']`, `['Content-Type']`). fastify lower-cases the
 * names it keeps (`reply.header`) and Node writes them as given, so the one ServerResponse class of the Kodo API
 * listener rewrites every name it is given — by `setHeader` and by `writeHead` — into that form on the way out.
 */
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { LRUCache } from 'lru-cache';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Go's `textproto.CanonicalMIMEHeaderKey`: the first letter and every letter after `-` upper-case, the others
 * lower-case (`x-qn-meta-m1` → `X-Qn-Meta-M1`, `etag` → `Etag`); a name with a character that is not a token
 * character is returned unchanged.
 */
export function canonicalHeaderName(name: string): string {
  let known = CANONICAL.get(name);
  if (known === undefined) {
    known = canonicalize(name);
    CANONICAL.set(name, known);
  }
  return known;
}

/**
 * Names already rewritten: every answer sends the same handful (`content-type`, `x-reqid`, …), so the per-character
 * rewrite runs once per name, not once per answer. Bounded (metadata names `x-qn-meta-*` are the client's).
 */
const CANONICAL = new LRUCache<string, string>({ max: 1024 });

function canonicalize(name: string): string {
  if (!TOKEN.test(name)) return name;
  let out = '';
  let upper = true;
  for (const ch of name) {
    out += upper ? ch.toUpperCase() : ch.toLowerCase();
    upper = ch === '-';
  }
  return out;
}

/** The same headers under canonical names. */
function canonicalHeaders(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) out[canonicalHeaderName(name)] = value;
  return out;
}

/** A ServerResponse that writes every header name in canonical form (see the module comment). */
export class CanonicalServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override setHeader(name: string, value: number | string | readonly string[]): this {
    return super.setHeader(canonicalHeaderName(name), value);
  }

  // Node's overloads: writeHead(status, headers?) and writeHead(status, message, headers?); headers as an object
  // (what fastify passes) or as a list.
  override writeHead(statusCode: number, ...rest: unknown[]): this {
    const last = rest.length - 1;
    const headers = rest[last];
    if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
      rest[last] = canonicalHeaders(headers as OutgoingHttpHeaders);
    } else if (Array.isArray(headers) && headers.every((h) => typeof h === 'string')) {
      rest[last] = headers.map((h: string, i) => (i % 2 === 0 ? canonicalHeaderName(h) : h));
    }
    return (super.writeHead as (status: number, ...args: unknown[]) => this)(statusCode, ...rest);
  }
}
