/**
 * Small helpers over Node's `IncomingHttpHeaders` shape (lower-case names), shared by the verifiers in this
 * directory (docs/development/kodo-protocol.md §2).
 */

/** Request headers as Node delivers them: lower-case names, a string or (rarely) a list of strings. */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** `application/x-www-form-urlencoded`, the default content type of every Kodo signature (docs/development/kodo-protocol.md §2.2, §2.3). */
export const FORM_TYPE = 'application/x-www-form-urlencoded';
/** `application/json`. */
export const JSON_TYPE = 'application/json';

/** The value of header `name` (lower-case); a list is joined with `, ` like Node does for repeated headers. */
export function headerValue(headers: HeaderMap, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** First element of a comma-separated header value (`X-Forwarded-*` lists), trimmed; undefined when empty. */
export function firstListItem(value: string | undefined): string | undefined {
  const first = value?.split(',')[0]?.trim();
  return first ? first : undefined;
}

/** The media type of a Content-Type value: parameters dropped, trimmed, lower-cased (`''` when absent). */
export function mediaType(contentType: string | undefined): string {
  return ((contentType ?? '').split(';')[0] ?? '').trim().toLowerCase();
}
