/**
 * Sign-in, the current session and sign-out (`/api/session`):
 * - `POST /api/session` `{accessKey, secretKey}` → 200 `{accessKey, root, csrf, expiresIn}` and the session cookie.
 *   The pair is checked against the key index (root or account pair; constant-time compare); 401
 *   `consoleSignInFailed` otherwise (the same answer for an unknown AccessKey and a wrong secret). Origin checked.
 *   Each attempt is counted per (client address, AccessKey) in the MetaStore, once across workers and nodes: the
 *   11th attempt within a minute of the pair's first is refused with 573 (the secret unchecked) until that minute
 *   has passed; a success forgets the count (sessions.ts `SignInThrottle`).
 * - `GET /api/session` → the same answer plus `signedIn: true` for a live session (the page reloads its CSRF token
 *   this way); 200 `{signedIn: false}` otherwise — not being signed in is the page's normal first state, not an error
 *   (a 401 would be logged by the browser on every load); 400 when more than one session cookie came (guard.ts).
 *   Route table: `console-session-optional`.
 * - `DELETE /api/session` → 204; the session ends on the server (its cookie is refused from then on).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../auth/compare.js';
import { Errors } from '../errors.js';
import { bodyOf, text } from './body.js';
import type { ConsoleApi } from './api-context.js';
import type { RouteCall } from '../http/route-call.js';
import { checkSameOrigin, setSessionCookie } from './guard.js';
import type { ConsoleSession, ConsoleSessions } from './sessions.js';

function sessionJson(sessions: ConsoleSessions, s: ConsoleSession): Record<string, unknown> {
  return { accessKey: s.accessKey, root: s.root, csrf: s.csrf, expiresIn: sessions.secondsLeft(s) };
}

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** `POST /api/session` (route table: `console-signin`; the Origin check and the throttle here). */
export async function signInApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g, sessions, signIns } = call.ctx;
  checkSameOrigin(request);
  const b = bodyOf(request);
  const accessKey = text(b, 'accessKey');
  const secretKey = text(b, 'secretKey');
  const address = request.ip;
  if (!(await signIns.admit(accessKey, address))) {
    request.log.warn({ accessKey, address }, 'console sign-in throttled');
    throw Errors.consoleSignInThrottled();
  }
  const known = g.secretOf(accessKey);
  // Compare against a dummy when the AccessKey is unknown, so both refusals take the same path.
  const ok = safeEqual(secretKey, known ?? '\u0000no such key\u0000') && known !== undefined;
  if (!ok) {
    request.log.warn({ accessKey, address }, 'console sign-in refused');
    throw Errors.consoleSignInFailed();
  }
  await signIns.succeeded(accessKey, address);
  const s = await sessions.create(accessKey, g.keyIndex.isRoot(accessKey));
  setSessionCookie(sessions, request, reply, s);
  request.log.info({ accessKey, root: s.root }, 'console sign-in');
  return sessionJson(sessions, s);
}

/** `GET /api/session`: the live session, or `{signedIn: false}`. */
export function sessionApi(call: Call): unknown {
  const s = call.callerIfAny;
  return s === undefined ? { signedIn: false } : { signedIn: true, ...sessionJson(call.ctx.sessions, s) };
}

/** `DELETE /api/session`: ends the session. */
export async function signOutApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { sessions } = call.ctx;
  await sessions.end(call.caller.id);
  setSessionCookie(sessions, request, reply, undefined);
  return reply.code(204).send();
}
