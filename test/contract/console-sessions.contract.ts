/**
 * The ConsoleSessionStore contract (src/ports/console-sessions.ts, `MetaStore.consoleSessions`), run by
 * meta-store.test.ts against every MetaStore implementation: sessions round-trip, renewals are compare-and-set on
 * their age, deletions and the sweeps (idle, per-key cap), and the sign-in attempt counter's fixed window —
 * including two stores on one database (worker processes, cluster nodes) counting concurrent attempts once.
 * Times in Unix ms.
 */
import { describe, expect, it } from 'vitest';
import type { ConsoleSessionRecord } from '../../src/ports/console-sessions.js';
import type { MetaStoreKind, MetaStoreKinds } from '../helpers/meta-stores.js';

const T0 = 1_700_000_000_000;

const rec = (idHash: string, accessKey: string, lastUsedMs = T0, extra: Partial<ConsoleSessionRecord> = {}): ConsoleSessionRecord => ({
  idHash,
  accessKey,
  root: false,
  csrf: `csrf-${idHash}`,
  createdMs: lastUsedMs,
  lastUsedMs,
  ...extra,
});

/** Registers the contract for every kind of `kinds`. */
export function consoleSessionsContract(kinds: MetaStoreKinds): void {
  describe.each(kinds.names)('ConsoleSessionStore contract: %s', (kind: MetaStoreKind) => {
    it('sessions: round-trip, renewal only when older than the minimum age, deletions, sweeps', async () => {
      const [meta] = await kinds.fresh(kind);
      const s = meta!.consoleSessions;
      const root = rec('a'.repeat(64), 'root-ak', T0, { root: true });
      await s.createSession(root);
      expect(await s.getSession(root.idHash)).toEqual(root);
      expect(await s.getSession('b'.repeat(64))).toBeUndefined();

      expect(await s.renewSession(root.idHash, T0 + 30_000, 60_000)).toBe(false);
      expect((await s.getSession(root.idHash))?.lastUsedMs).toBe(T0);
      expect(await s.renewSession(root.idHash, T0 + 60_001, 60_000)).toBe(true);
      expect((await s.getSession(root.idHash))?.lastUsedMs).toBe(T0 + 60_001);
      expect(await s.renewSession('c'.repeat(64), T0 + 60_001, 60_000)).toBe(false);

      for (const [h, ak, used] of [['d', 'acct', T0], ['e', 'acct', T0 + 1], ['f', 'other', T0 + 2]] as const) {
        await s.createSession(rec(h.repeat(64), ak, used));
      }
      expect(await s.deleteSession('f'.repeat(64))).toBe(true);
      expect(await s.deleteSession('f'.repeat(64))).toBe(false);
      expect(await s.deleteSessionsOf('acct')).toBe(2);
      expect(await s.getSession('d'.repeat(64))).toBeUndefined();

      // Sweeps: idle ones go; past the per-key cap the least recently used go.
      for (let i = 0; i < 4; i++) await s.createSession(rec(`${i}`.repeat(64), 'many', T0 + 100_000 + i));
      await s.createSession(rec('9'.repeat(64), 'idle', T0 - 1));
      expect(await s.sweepSessions(T0, 2)).toBe(3); // 'idle' by age; '0' and '1' past the cap of 2 for 'many'
      expect(await s.getSession('9'.repeat(64))).toBeUndefined();
      expect(await s.getSession('0'.repeat(64))).toBeUndefined();
      expect(await s.getSession('1'.repeat(64))).toBeUndefined();
      expect(await s.getSession('3'.repeat(64))).toBeDefined();
      expect(await s.getSession(root.idHash)).toBeDefined();
    });

    it('sign-in attempts: a fixed window from the first attempt, cleared by a success, swept when stale', async () => {
      const [meta] = await kinds.fresh(kind);
      const s = meta!.consoleSessions;
      const counts = [];
      for (let i = 0; i < 3; i++) counts.push(await s.countSignInAttempt('k', T0 + i * 1000, 60_000));
      expect(counts).toEqual([1, 2, 3]);
      expect(await s.countSignInAttempt('other', T0, 60_000)).toBe(1);
      expect(await s.countSignInAttempt('k', T0 + 59_999, 60_000)).toBe(4);
      // The window began at T0: at T0 + 60 s a new one begins.
      expect(await s.countSignInAttempt('k', T0 + 60_000, 60_000)).toBe(1);
      expect(await s.countSignInAttempt('k', T0 + 61_000, 60_000)).toBe(2);
      await s.clearSignInAttempts('k');
      expect(await s.countSignInAttempt('k', T0 + 62_000, 60_000)).toBe(1);
      expect(await s.sweepSignInAttempts(T0)).toBe(1); // 'other'
      expect(await s.countSignInAttempt('other', T0 + 63_000, 60_000)).toBe(1);
    });

    it('two stores on one database count 20 concurrent attempts of one key once each (1..20)', async () => {
      const [a, b] = await kinds.fresh(kind, 2);
      const counts = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a! : b!).consoleSessions.countSignInAttempt('shared', T0 + i, 60_000)),
      );
      expect([...counts].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      // A session made through one store is seen and ended through the other.
      await a!.consoleSessions.createSession(rec('7'.repeat(64), 'ak'));
      expect(await b!.consoleSessions.getSession('7'.repeat(64))).toMatchObject({ accessKey: 'ak' });
      expect(await b!.consoleSessions.deleteSession('7'.repeat(64))).toBe(true);
      expect(await a!.consoleSessions.getSession('7'.repeat(64))).toBeUndefined();
    });
  });
}
