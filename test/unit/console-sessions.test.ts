/**
 * The console's sessions and sign-in throttle (src/console/sessions.ts) over the embedded SQLite MetaStore (a temp
 * dir; the store's own behaviour on SQLite and PostgreSQL is the contract suite's, test/contract/console-sessions
 * .contract.ts): sessions stored hashed, ended after their idle time, on sign-out and with their key pair; renewals
 * written at most once per renewal interval; the per-key cap; the throttle's limit, window and per-address keys.
 * Time is moved with the AdjustableClock, never slept.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConsoleSessions, MAX_SESSIONS_PER_KEY, sha256Hex, SignInThrottle } from '../../src/console/sessions.js';
import { AdjustableClock } from '../../src/ports/clock.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

const dir = mkdtempSync(join(tmpdir(), 'granary-console-sessions-'));
const stores: SqliteMetaStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
function store(): SqliteMetaStore {
  const s = new SqliteMetaStore(join(dir, `meta-${n++}.db`));
  stores.push(s);
  return s;
}

describe('console sessions', () => {
  it('are stored under the SHA-256 of their id and end after their idle time, on sign-out and with their key pair', async () => {
    const clock = new AdjustableClock();
    const meta = store();
    const sessions = new ConsoleSessions(meta.consoleSessions, clock, 30 * 60_000);
    const a = await sessions.create('ak', true);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrf).not.toBe(a.id);
    expect(await meta.consoleSessions.getSession(a.id)).toBeUndefined();
    expect(await meta.consoleSessions.getSession(sha256Hex(a.id))).toMatchObject({ accessKey: 'ak', root: true, csrf: a.csrf });

    clock.advance(29 * 60);
    expect(await sessions.use(a.id)).toMatchObject({ id: a.id, accessKey: 'ak', root: true, csrf: a.csrf });
    clock.advance(29 * 60);
    expect(await sessions.use(a.id)).toBeDefined(); // renewed by the previous use
    expect(sessions.secondsLeft((await sessions.use(a.id))!)).toBe(30 * 60);
    clock.advance(31 * 60);
    expect(await sessions.use(a.id)).toBeUndefined();
    expect(await meta.consoleSessions.getSession(sha256Hex(a.id))).toBeUndefined(); // an expired one found is deleted
    expect(await sessions.use(undefined)).toBeUndefined();
    expect(await sessions.use('not an id')).toBeUndefined();

    const b = await sessions.create('ak', true);
    await sessions.end(b.id);
    expect(await sessions.use(b.id)).toBeUndefined();

    const z1 = await sessions.create('z', false);
    const z2 = await sessions.create('z', false);
    const keep = await sessions.create('keep', false);
    await sessions.endAllOf('z');
    expect(await sessions.use(z1.id)).toBeUndefined();
    expect(await sessions.use(z2.id)).toBeUndefined();
    expect(await sessions.use(keep.id)).toBeDefined();
  });

  it('write a renewal at most once per renewal interval, however many calls a page makes', async () => {
    const clock = new AdjustableClock();
    const meta = store();
    const sessions = new ConsoleSessions(meta.consoleSessions, clock, 60 * 60_000);
    expect(sessions.renewAfterMs).toBe(60_000);
    const renew = vi.spyOn(meta.consoleSessions, 'renewSession');
    const s = await sessions.create('ak', false);
    for (let i = 0; i < 50; i++) {
      clock.offsetMs += 1000; // 50 calls, one a second
      expect(await sessions.use(s.id)).toBeDefined();
    }
    expect(renew).not.toHaveBeenCalled();
    clock.offsetMs += 10_000; // 60 s since the sign-in
    await sessions.use(s.id);
    await sessions.use(s.id);
    expect(renew).toHaveBeenCalledTimes(1);
    // A short timeout renews at a tenth of it.
    expect(new ConsoleSessions(meta.consoleSessions, clock, 60_000).renewAfterMs).toBe(6000);
  });

  it('keep at most MAX_SESSIONS_PER_KEY sessions of one key at the next sweep (least recently used go first)', async () => {
    const clock = new AdjustableClock();
    const meta = store();
    const sessions = new ConsoleSessions(meta.consoleSessions, clock, 60 * 60_000);
    const made = [];
    for (let i = 0; i <= MAX_SESSIONS_PER_KEY; i++) {
      clock.offsetMs += 10;
      made.push(await sessions.create('ak', false));
    }
    clock.advance(61); // the next create sweeps
    const last = await sessions.create('other', false);
    expect(await sessions.use(made[0]!.id)).toBeUndefined();
    expect(await sessions.use(made[1]!.id)).toBeDefined();
    expect(await sessions.use(made[MAX_SESSIONS_PER_KEY]!.id)).toBeDefined();
    expect(await sessions.use(last.id)).toBeDefined();
  });
});

describe('sign-in throttle', () => {
  it('admits 10 attempts of one (address, AccessKey) a minute, refuses the 11th, forgets a success', async () => {
    const clock = new AdjustableClock();
    const meta = store();
    const throttle = new SignInThrottle(meta.consoleSessions, clock);
    for (let i = 0; i < 10; i++) expect(await throttle.admit('root', '198.51.100.7')).toBe(true);
    expect(await throttle.admit('root', '198.51.100.7')).toBe(false);
    // The same key from another address, and another key from the same address, are not affected.
    expect(await throttle.admit('root', '203.0.113.9')).toBe(true);
    expect(await throttle.admit('other', '198.51.100.7')).toBe(true);
    clock.advance(61);
    expect(await throttle.admit('root', '198.51.100.7')).toBe(true);
    for (let i = 0; i < 9; i++) await throttle.admit('root', '198.51.100.7');
    await throttle.succeeded('root', '198.51.100.7');
    expect(await throttle.admit('root', '198.51.100.7')).toBe(true);
  });

  it('counts attempts once across processes sharing the database', async () => {
    const clock = new AdjustableClock();
    const path = join(dir, 'shared.db');
    const [a, b] = [new SqliteMetaStore(path), new SqliteMetaStore(path)];
    stores.push(a, b);
    const ta = new SignInThrottle(a.consoleSessions, clock);
    const tb = new SignInThrottle(b.consoleSessions, clock);
    for (let i = 0; i < 5; i++) {
      expect(await ta.admit('root', '::1')).toBe(true);
      expect(await tb.admit('root', '::1')).toBe(true);
    }
    expect(await ta.admit('root', '::1')).toBe(false);
    expect(await tb.admit('root', '::1')).toBe(false);
  });
});
