/**
 * Web console sessions, kept in memory (a restart signs everyone out: sign in again). A session is created by a
 * successful sign-in with an AccessKey/SecretKey pair and names only the AccessKey: the secret is never stored
 * here nor sent back to the browser (signing a private link or an upload token looks it up in the key index).
 *
 * - `id`: 32 random bytes, URL-safe base64; travels only in the HttpOnly, SameSite=Strict cookie.
 * - `csrf`: 32 random bytes, URL-safe base64; the page echoes it in `X-Granary-CSRF` on every non-GET call.
 * - Idle timeout: a session unused for `ttlMs` (GRANARY_CONSOLE_SESSION_MINUTES) ends; each authorised call renews it.
 * - Sign-out deletes the session, so its cookie is refused from then on (401), even if replayed.
 * - At most `maxSessions` live at once: the least recently used one ends first.
 * Time comes from the Clock port, so tests move time instead of sleeping.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../ports/clock.js';

/** One signed-in browser. Times in Unix milliseconds. */
export interface ConsoleSession {
  id: string;
  accessKey: string;
  /** Whether the AccessKey is the root key (the Keys screen and every bucket). */
  root: boolean;
  csrf: string;
  createdMs: number;
  lastUsedMs: number;
}

const token = (): string => randomBytes(32).toString('base64url');

export class ConsoleSessions {
  /** Insertion order = least recently used first (a used session is moved to the end). */
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    private readonly clock: Clock,
    /** Idle time after which a session ends, milliseconds. */
    readonly ttlMs: number,
    private readonly maxSessions = 10_000,
  ) {}

  /** Starts a session for `accessKey` (already checked by the caller). */
  create(accessKey: string, root: boolean): ConsoleSession {
    const now = this.clock.nowMs();
    const s: ConsoleSession = { id: token(), accessKey, root, csrf: token(), createdMs: now, lastUsedMs: now };
    this.sessions.set(s.id, s);
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    return s;
  }

  /** The live session of `id` (renewed), or undefined when unknown, signed out or idle past the timeout. */
  use(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    const now = this.clock.nowMs();
    this.sessions.delete(id);
    if (now - s.lastUsedMs > this.ttlMs) return undefined;
    s.lastUsedMs = now;
    this.sessions.set(id, s);
    return s;
  }

  /** Ends a session (sign-out). */
  end(id: string): void {
    this.sessions.delete(id);
  }

  /** Ends every session of `accessKey` (its key pair was deleted). */
  endAllOf(accessKey: string): void {
    for (const [id, s] of this.sessions) if (s.accessKey === accessKey) this.sessions.delete(id);
  }

  /** Seconds left before `s` times out if unused. */
  secondsLeft(s: ConsoleSession): number {
    return Math.max(0, Math.round((s.lastUsedMs + this.ttlMs - this.clock.nowMs()) / 1000));
  }
}

/**
 * Failed sign-ins per (AccessKey, client address): after `limit` failures within `windowMs`, further attempts for
 * that pair are refused (573) until the window that started with the first failure has passed. A success clears
 * the count. At most `maxEntries` pairs are tracked (the oldest forgotten first), so memory stays bounded.
 */
export class SignInThrottle {
  private readonly failures = new Map<string, { firstMs: number; count: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly limit = 10,
    private readonly windowMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {}

  private entry(key: string): { firstMs: number; count: number } | undefined {
    const e = this.failures.get(key);
    if (e && this.clock.nowMs() - e.firstMs >= this.windowMs) {
      this.failures.delete(key);
      return undefined;
    }
    return e;
  }

  /** Whether another attempt for `accessKey` from `address` is refused now. */
  blocked(accessKey: string, address: string): boolean {
    return (this.entry(`${address} ${accessKey}`)?.count ?? 0) >= this.limit;
  }

  /** Counts a failed attempt. */
  failed(accessKey: string, address: string): void {
    const key = `${address} ${accessKey}`;
    const e = this.entry(key);
    if (e) e.count++;
    else this.failures.set(key, { firstMs: this.clock.nowMs(), count: 1 });
    while (this.failures.size > this.maxEntries) {
      const oldest = this.failures.keys().next().value;
      if (oldest === undefined) break;
      this.failures.delete(oldest);
    }
  }

  /** Forgets the failures of a pair that signed in. */
  succeeded(accessKey: string, address: string): void {
    this.failures.delete(`${address} ${accessKey}`);
  }
}
