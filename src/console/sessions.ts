/**
 * Web console sessions and the sign-in throttle, kept in the MetaStore (ports/console-sessions.ts) so that every
 * worker process and every cluster node sharing the database answers every console request alike (and a restart
 * signs nobody out). A session is created by a successful sign-in with an AccessKey/SecretKey pair and names only
 * the AccessKey: the secret is never stored here nor sent back to the browser.
 *
 * - `id`: 32 random bytes, URL-safe base64 (43 characters); travels only in the HttpOnly, SameSite=Strict cookie.
 *   The store keeps its SHA-256 (hex), never the id.
 * - `csrf`: 32 random bytes, URL-safe base64; the page echoes it in `X-Granary-CSRF` on every non-GET call.
 * - Idle timeout: a session unused for `ttlMs` (GRANARY_CONSOLE_SESSION_MINUTES) ends. Renewals are coarse: a use
 *   writes the new last-use time only when the stored one is at least `renewAfterMs` old (min(1 minute, ttl/10)),
 *   so a page making many calls writes about once a minute instead of once per call (each write is a commit —
 *   an fdatasync in SQLite, a WAL flush in PostgreSQL — and takes SQLite's single write lock from uploads). The cost:
 *   a session may end up to `renewAfterMs` before a full idle `ttlMs` has passed since its last use.
 * - Sign-out deletes the session, so its cookie is refused from then on (401), even if replayed.
 * - Expired sessions and stale throttle counts are swept by this process at most once a minute (at sign-in
 *   attempts), and each AccessKey keeps at most `MAX_SESSIONS_PER_KEY` sessions (the least recently used go first).
 * Time comes from the Clock port, so tests move time instead of sleeping.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../ports/clock.js';
import type { ConsoleSessionStore } from '../ports/console-sessions.js';

/** One signed-in browser. Times in Unix milliseconds. */
export interface ConsoleSession {
  /** The id the cookie carries (never stored). */
  id: string;
  accessKey: string;
  /** Whether the AccessKey is the root key (the Keys screen and every bucket). */
  root: boolean;
  csrf: string;
  createdMs: number;
  lastUsedMs: number;
}

/** Sessions one AccessKey may hold at once; the sweep ends the least recently used beyond this. */
export const MAX_SESSIONS_PER_KEY = 100;
/** How often one process sweeps expired sessions and throttle counts, ms. */
const SWEEP_EVERY_MS = 60_000;
/** A session id as minted here: 32 bytes in URL-safe base64, no padding. */
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;

const token = (): string => randomBytes(32).toString('base64url');

/** SHA-256 of `text`, lower-case hex (64 characters). */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Runs `sweep` at most once per SWEEP_EVERY_MS of `clock` in this process; a failed sweep is retried next time. */
class Sweeper {
  private lastMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly sweep: (nowMs: number) => Promise<unknown>,
  ) {}

  async maybe(): Promise<void> {
    const now = this.clock.nowMs();
    if (Math.abs(now - this.lastMs) < SWEEP_EVERY_MS) return;
    this.lastMs = now;
    // A sweep is housekeeping: its failure must not fail the request that triggered it.
    await this.sweep(now).catch(() => {
      this.lastMs = Number.NEGATIVE_INFINITY;
    });
  }
}

export class ConsoleSessions {
  /** A use writes the renewal only when the stored last use is at least this old, ms. */
  readonly renewAfterMs: number;
  private readonly sweeper: Sweeper;

  constructor(
    private readonly store: ConsoleSessionStore,
    private readonly clock: Clock,
    /** Idle time after which a session ends, milliseconds. */
    readonly ttlMs: number,
    /** GRANARY_PUBLIC_URL: when it is https, the session cookie is the `__Host-` one (guard.ts). */
    readonly publicUrl?: string,
  ) {
    this.renewAfterMs = Math.min(60_000, Math.floor(ttlMs / 10));
    this.sweeper = new Sweeper(clock, (now) => store.sweepSessions(now - ttlMs, MAX_SESSIONS_PER_KEY));
  }

  /** Starts a session for `accessKey` (already checked by the caller). */
  async create(accessKey: string, root: boolean): Promise<ConsoleSession> {
    await this.sweeper.maybe();
    const now = this.clock.nowMs();
    const s: ConsoleSession = { id: token(), accessKey, root, csrf: token(), createdMs: now, lastUsedMs: now };
    await this.store.createSession({ idHash: sha256Hex(s.id), accessKey, root, csrf: s.csrf, createdMs: now, lastUsedMs: now });
    return s;
  }

  /** The live session of `id` (renewed, see the module comment), or undefined when unknown, signed out or idle past the timeout. */
  async use(id: string | undefined): Promise<ConsoleSession | undefined> {
    if (id === undefined || !ID_SHAPE.test(id)) return undefined;
    const idHash = sha256Hex(id);
    const rec = await this.store.getSession(idHash);
    if (!rec) return undefined;
    const now = this.clock.nowMs();
    if (now - rec.lastUsedMs > this.ttlMs) {
      await this.store.deleteSession(idHash);
      return undefined;
    }
    const s: ConsoleSession = { id, accessKey: rec.accessKey, root: rec.root, csrf: rec.csrf, createdMs: rec.createdMs, lastUsedMs: rec.lastUsedMs };
    if (now - rec.lastUsedMs >= this.renewAfterMs && (await this.store.renewSession(idHash, now, this.renewAfterMs))) s.lastUsedMs = now;
    return s;
  }

  /** Ends a session (sign-out). */
  async end(id: string): Promise<void> {
    await this.store.deleteSession(sha256Hex(id));
  }

  /** Ends every session of `accessKey` (its key pair was deleted). */
  async endAllOf(accessKey: string): Promise<void> {
    await this.store.deleteSessionsOf(accessKey);
  }

  /** Seconds left before `s` times out if unused (counted from its last written renewal). */
  secondsLeft(s: ConsoleSession): number {
    return Math.max(0, Math.round((s.lastUsedMs + this.ttlMs - this.clock.nowMs()) / 1000));
  }
}

/**
 * Sign-in attempts per (client address, AccessKey), counted in the store so every worker and node counts each
 * attempt once: at most `limit` attempts within a window of `windowMs` that starts with the first attempt; past
 * that every attempt of the pair is refused (573) until the window has passed. A success forgets the pair's count.
 * Keyed by the pair, an attacker guessing an AccessKey's secret from one address does not lock the key's owner out
 * from another address. The client address is `request.ip`: the socket's peer, or the client named by
 * X-Forwarded-For when the peer is a proxy trusted by GRANARY_TRUST_PROXY (so clients behind a proxy are told
 * apart). The stored key is the SHA-256 of the pair (bounded size; typed AccessKeys are not kept).
 */
export class SignInThrottle {
  private readonly sweeper: Sweeper;

  constructor(
    private readonly store: ConsoleSessionStore,
    private readonly clock: Clock,
    private readonly limit = 10,
    private readonly windowMs = 60_000,
  ) {
    this.sweeper = new Sweeper(clock, (now) => store.sweepSignInAttempts(now - windowMs));
  }

  private key(accessKey: string, address: string): string {
    return sha256Hex(`${address}\n${accessKey}`);
  }

  /**
   * Counts an attempt of `accessKey` from `address` before its secret is checked; false when it is over the limit
   * (refuse it with 573 without checking the secret).
   */
  async admit(accessKey: string, address: string): Promise<boolean> {
    await this.sweeper.maybe();
    return (await this.store.countSignInAttempt(this.key(accessKey, address), this.clock.nowMs(), this.windowMs)) <= this.limit;
  }

  /** Forgets the attempts of a pair that signed in. */
  async succeeded(accessKey: string, address: string): Promise<void> {
    await this.store.clearSignInAttempts(this.key(accessKey, address));
  }
}
