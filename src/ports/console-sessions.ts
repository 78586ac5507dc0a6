/**
 * The ConsoleSessionStore port: the web console's sessions and its sign-in throttle, kept in the MetaStore's
 * database so every worker process and every cluster node answers every console request alike (a session made by
 * one process is known to all; failed sign-ins are counted once, wherever they landed).
 *
 * Sessions are stored under the SHA-256 of their id (`idHash`, 64 hex characters): the id itself travels only in
 * the browser's cookie, so a copy of the database names no usable session. Times are Unix milliseconds given by the
 * caller (the Clock port), so tests move time instead of sleeping. The policy (idle timeout, how often a renewal
 * is written, the throttle's limit) is the caller's: src/console/sessions.ts.
 *
 * Implementation: store/sql/console-sessions.ts on SQLite and PostgreSQL (tables `console_sessions`,
 * `console_sign_in_failures`; PostgreSQL migration 2).
 */

/** One signed-in browser as stored. Times in Unix ms. */
export interface ConsoleSessionRecord {
  /** SHA-256 of the session id, lower-case hex. */
  idHash: string;
  accessKey: string;
  /** Whether `accessKey` was the root key at sign-in. */
  root: boolean;
  /** The CSRF token the page echoes in `X-Granary-CSRF` (URL-safe base64). */
  csrf: string;
  createdMs: number;
  /** The last renewal written (renewals are coarse: see src/console/sessions.ts), ms. */
  lastUsedMs: number;
}

export interface ConsoleSessionStore {
  /** Stores a new session (its `idHash` is unique: 32 random bytes hashed). */
  createSession(rec: ConsoleSessionRecord): Promise<void>;
  /** The session stored under `idHash`, expired or not (the caller judges idleness), or undefined. */
  getSession(idHash: string): Promise<ConsoleSessionRecord | undefined>;
  /**
   * Sets `lastUsedMs` of `idHash` to `nowMs` when the stored value is older than `nowMs - minAgeMs` (so concurrent
   * renewals write once). True when a row changed.
   */
  renewSession(idHash: string, nowMs: number, minAgeMs: number): Promise<boolean>;
  /** Deletes one session (sign-out); true when it existed. */
  deleteSession(idHash: string): Promise<boolean>;
  /** Deletes every session of `accessKey` (its key pair was deleted); returns how many. */
  deleteSessionsOf(accessKey: string): Promise<number>;
  /**
   * Deletes sessions last used at or before `idleBeforeMs` (the expiry sweep), and keeps at most `maxPerKey` of the
   * most recently used sessions of each AccessKey that has more; returns how many were deleted.
   */
  sweepSessions(idleBeforeMs: number, maxPerKey: number): Promise<number>;

  /**
   * Counts one sign-in attempt under `key` (e.g. `<client address> <AccessKey>`) in a fixed window: when the stored
   * window began at or before `nowMs - windowMs` (or there is none) a new one begins at `nowMs` with count 1, else
   * the count goes up by one. Returns the count after this attempt. Atomic: N concurrent calls from any processes
   * return 1..N (each once) within one window.
   */
  countSignInAttempt(key: string, nowMs: number, windowMs: number): Promise<number>;
  /** Forgets the attempts of `key` (it signed in). */
  clearSignInAttempts(key: string): Promise<void>;
  /** Deletes the counts whose window began at or before `beforeMs`; returns how many. */
  sweepSignInAttempts(beforeMs: number): Promise<number>;
}
