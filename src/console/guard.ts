/**
 * Who is calling the console API, decided in one place (the route table's auth step, src/routes/auth-step.ts, calls
 * `callerOf` before every `console-session` route):
 *
 * - `sessionOf(sessions, request)`: the session named by the session cookie, or 401 `consoleNoSession`; 400
 *   `consoleCookieConflict` when the request carries more than one session cookie (a page on another port of the
 *   same host can add a cookie of the same name with a narrower Path, and the browser would send both: refusing
 *   beats guessing which one the user meant).
 * - The cookie's name: `__Host-granary_console` (Secure, Path=/, no Domain) when the console is reached over https —
 *   the request's scheme as fastify sees it (X-Forwarded-Proto counts only from a proxy trusted by
 *   GRANARY_TRUST_PROXY), or a GRANARY_PUBLIC_URL starting with https:// — else `granary_console`.
 * - `checkSameOrigin(request)`: for every non-GET call (sign-in included). A present `Origin` must be this
 *   listener's own origin (`<scheme>://<host>`: `Host`, or X-Forwarded-Host from a trusted proxy), and
 *   `Sec-Fetch-Site`, when sent, must be `same-origin` or `none`; otherwise 403 `consoleCsrf`.
 * - `checkCsrf(request, session)`: non-GET calls of a signed-in session must also carry the session's token in
 *   `X-Granary-CSRF` (constant-time compare), else 403 `consoleCsrf`.
 * The bucket checks themselves are the auth step's, exactly as on the Kodo API (src/auth/authorize.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../auth/compare.js';
import { headerValue } from '../auth/headers.js';
import { Errors } from '../errors.js';
import type { ConsoleSession, ConsoleSessions } from './sessions.js';

/** The session cookie's name over http. */
export const SESSION_COOKIE = 'granary_console';
/** The session cookie's name over https (the `__Host-` prefix: the browser keeps it only with Secure, Path=/, no Domain). */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;
/** The header carrying the CSRF token. */
export const CSRF_HEADER = 'x-granary-csrf';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether `request` is a state-changing call (needs the Origin check and the CSRF token). */
export function isUnsafe(request: FastifyRequest): boolean {
  return !SAFE_METHODS.has(request.method);
}

/** Whether the console is reached over https: the request's scheme (trusted proxies only), or an https public URL. */
export function isHttps(request: FastifyRequest, publicUrl: string | undefined): boolean {
  return request.protocol === 'https' || (publicUrl?.startsWith('https://') ?? false);
}

/** The session cookie's name for `request` (see the module comment). */
export function sessionCookieName(request: FastifyRequest, publicUrl: string | undefined): string {
  return isHttps(request, publicUrl) ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

/** 403 unless the request comes from a page of this listener (see the module comment). */
export function checkSameOrigin(request: FastifyRequest): void {
  const site = headerValue(request.headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw Errors.consoleCsrf(`Sec-Fetch-Site: ${site}`);
  const origin = headerValue(request.headers, 'origin');
  if (origin === undefined) return;
  const host = request.host;
  if (!host || origin !== `${request.protocol}://${host}`) throw Errors.consoleCsrf(`Origin ${origin}`);
}

/**
 * The values of every cookie named `name` in the request's Cookie header(s), in order. Parsed here rather than
 * through the cookie plugin, which keeps only one value per name.
 */
export function cookieValues(request: FastifyRequest, name: string): string[] {
  const raw = request.headers.cookie;
  if (raw === undefined) return [];
  const out: string[] = [];
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    out.push(value);
  }
  return out;
}

/** The caller's live session (renewed), or 401; 400 when more than one session cookie came. */
export async function sessionOf(sessions: ConsoleSessions, request: FastifyRequest): Promise<ConsoleSession> {
  const values = cookieValues(request, sessionCookieName(request, sessions.publicUrl));
  if (values.length > 1) throw Errors.consoleCookieConflict();
  const s = await sessions.use(values[0]);
  if (!s) throw Errors.consoleNoSession();
  return s;
}

/** 403 unless the request carries the session's CSRF token. */
export function checkCsrf(request: FastifyRequest, session: ConsoleSession): void {
  const sent = headerValue(request.headers, CSRF_HEADER);
  if (sent === undefined || !safeEqual(sent, session.csrf)) throw Errors.consoleCsrf('X-Granary-CSRF');
}

/**
 * Sets (or, with `s` undefined, clears) the session cookie: HttpOnly, SameSite=Strict, Path=/, and over https the
 * `__Host-` name with Secure.
 */
export function setSessionCookie(sessions: ConsoleSessions, request: FastifyRequest, reply: FastifyReply, s: ConsoleSession | undefined): void {
  const secure = isHttps(request, sessions.publicUrl);
  const name = secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
  const opts = { httpOnly: true, sameSite: 'strict', path: '/', secure } as const;
  if (s) reply.setCookie(name, s.id, opts);
  else reply.clearCookie(name, opts);
}

/**
 * The caller of a console API call: the live session, after the Origin check and the CSRF token for a non-GET
 * call. 403 `consoleCsrf`, 401 `consoleNoSession`, 400 `consoleCookieConflict`.
 */
export async function callerOf(sessions: ConsoleSessions, request: FastifyRequest): Promise<ConsoleSession> {
  const unsafe = isUnsafe(request);
  if (unsafe) checkSameOrigin(request);
  const s = await sessionOf(sessions, request);
  if (unsafe) checkCsrf(request, s);
  return s;
}

/**
 * 403 `forbidden` unless the session is the root key's; `what` names the refused action in the message
 * ("only the root key may <what>"), e.g. `manage key pairs`, `change pipelines`.
 */
export function requireRoot(s: ConsoleSession, what: string): void {
  if (!s.root) throw Errors.forbidden(`only the root key may ${what}`);
}
