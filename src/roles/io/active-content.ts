/**
 * Uploaded content never runs script on Granary's origin (docs/operations/downloads-security.md). Every answer of the download
 * route — plain downloads, bound-domain downloads, fop results, saveas results, errors — carries:
 * - `X-Content-Type-Options: nosniff`: the browser uses the declared type, never guesses HTML or script from bytes;
 * - `Content-Security-Policy: sandbox`, unless the declared type is passive media (a raster image, audio, video, a
 *   font, a PDF): the document gets an opaque origin and runs no script, so a page uploaded by one tenant cannot
 *   read or set the cookies of the site (the console's session), call the API with them, or open pop-ups. HTML,
 *   XHTML, SVG, XML (any `+xml` type), JavaScript, text and unknown or malformed types are all sandboxed: the list
 *   names what is known to be harmless rather than what is known to be active, so a type nobody thought of is
 *   sandboxed. Sandboxing a passive document would only break viewers that need plugins (Chromium's PDF viewer).
 *
 * Both are set last (an `onSend` hook), over anything else: object metadata set with `changeHeaders`
 * (`!Content-Type`, `!Content-Security-Policy`…) cannot turn them off (the final `Content-Type` decides). `attname` (`Content-Disposition:
 * attachment`) keeps working; the two headers ride along with it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Type prefixes (`<type>/`) whose documents run no script, and single passive types. SVG is excluded below. */
const PASSIVE_TOP_LEVEL = new Set(['image', 'audio', 'video', 'font']);
const PASSIVE_TYPES = new Set(['application/pdf']);

/**
 * Whether a `Content-Type` value declares passive media (see the module comment): its essence (the part before
 * `;`, trimmed, lower-cased) is `image/*` other than SVG or any `+xml`, `audio/*`, `video/*`, `font/*` or
 * `application/pdf`. Absent or malformed values are not passive.
 */
export function isPassiveType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const essence = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  const m = /^([a-z0-9!#$&^_.+-]+)\/([a-z0-9!#$&^_.+-]+)$/.exec(essence);
  if (!m) return false;
  const [, top = '', sub = ''] = m;
  if (sub === 'svg+xml' || sub.endsWith('+xml') || sub === 'xml') return false;
  return PASSIVE_TOP_LEVEL.has(top) || PASSIVE_TYPES.has(essence);
}

/** The security headers of one download answer whose `Content-Type` is `contentType` (lower-case names). */
export function downloadSecurityHeaders(contentType: string | undefined): Record<string, string> {
  const h: Record<string, string> = { 'x-content-type-options': 'nosniff' };
  if (!isPassiveType(contentType)) h['content-security-policy'] = 'sandbox';
  return h;
}

/** `onSend` hook of the download route: sets the headers of `downloadSecurityHeaders` on every answer. */
export function securityHeadersOnSend(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void {
  const type = reply.getHeader('content-type');
  reply.headers(downloadSecurityHeaders(typeof type === 'string' ? type : undefined));
  done(null, payload);
}
