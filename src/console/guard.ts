/**
 * Who is calling the console API, decided in one place (src/console/api-*.ts call these before anything else):
 *
 * - `sessionOf(request)`: the session named by the `granary_console` cookie, or 401 `consoleNoSession`.
 * - `checkSameOrigin(request)`: for every non-GET call (sign-in included). A present `Origin` must be this
 *   listener's own origin (`http(s)://<Host>`), and `Sec-Fetch-Site`, when sent, must be `same-origin` or `none`;
 *   otherwise 403 `consoleCsrf`.
 * - `checkCsrf(request, session)`: non-GET calls of a signed-in session must also carry the session's token in
 *   `X-Granary-CSRF` (constant-time compare), else 403 `consoleCsrf`.
 * The bucket checks themselves are `authorizeBucket` (src/auth/authorize.ts), exactly as on the Kodo API.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../auth/compare.js';
import { headerValue } from '../auth/headers.js';
import { Errors } from '../errors.js';
import type { ConsoleSession, ConsoleSessions } from './sessions.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'granary_console';
/** The header carrying the CSRF token. */
export const CSRF_HEADER = 'x-granary-csrf';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether `request` is a state-changing call (needs the Origin check and the CSRF token). */
export function isUnsafe(request: FastifyRequest): boolean {
  return !SAFE_METHODS.has(request.method);
}

/** The scheme the browser used: `X-Forwarded-Proto` (first item) behind a proxy, else the socket's. */
function schemeOf(request: FastifyRequest): string {
  const forwarded = headerValue(request.headers, 'x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  return forwarded === 'https' || forwarded === 'http' ? forwarded : request.protocol;
}

/** 403 unless the request comes from a page of this listener (see the module comment). */
export function checkSameOrigin(request: FastifyRequest): void {
  const site = headerValue(request.headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw Errors.consoleCsrf(`Sec-Fetch-Site: ${site}`);
  const origin = headerValue(request.headers, 'origin');
  if (origin === undefined) return;
  const host = headerValue(request.headers, 'x-forwarded-host')?.split(',')[0]?.trim() ?? headerValue(request.headers, 'host');
  if (!host || origin !== `${schemeOf(request)}://${host}`) throw Errors.consoleCsrf(`Origin ${origin}`);
}

/** The caller's live session (renewed), or 401. */
export function sessionOf(sessions: ConsoleSessions, request: FastifyRequest): ConsoleSession {
  const s = sessions.use(request.cookies[SESSION_COOKIE]);
  if (!s) throw Errors.consoleNoSession();
  return s;
}

/** 403 unless the request carries the session's CSRF token. */
export function checkCsrf(request: FastifyRequest, session: ConsoleSession): void {
  const sent = headerValue(request.headers, CSRF_HEADER);
  if (sent === undefined || !safeEqual(sent, session.csrf)) throw Errors.consoleCsrf('X-Granary-CSRF');
}

/** Sets the session cookie: HttpOnly, SameSite=Strict, Path=/, Secure when the page came over https. */
export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, s: ConsoleSession | undefined): void {
  const secure = schemeOf(request) === 'https';
  if (s) reply.setCookie(SESSION_COOKIE, s.id, { httpOnly: true, sameSite: 'strict', path: '/', secure });
  else reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', path: '/', secure });
}

/**
 * The caller of a console API call: the live session, after the Origin check and the CSRF token for a non-GET
 * call. 403 `consoleCsrf`, 401 `consoleNoSession`.
 */
export function callerOf(sessions: ConsoleSessions, request: FastifyRequest): ConsoleSession {
  const unsafe = isUnsafe(request);
  if (unsafe) checkSameOrigin(request);
  const s = sessionOf(sessions, request);
  if (unsafe) checkCsrf(request, s);
  return s;
}

/** 403 unless the session is the root key's (the Keys screen). */
export function requireRoot(s: ConsoleSession): void {
  if (!s.root) throw Errors.forbidden('only the root key may manage key pairs');
}
