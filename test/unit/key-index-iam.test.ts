/**
 * Sub-user keys in the key index (src/auth/key-index.ts, src/iam/principals.ts): an enabled pair of an enabled user
 * resolves to its principal with its own and its enabled groups' enabled policies; a disabled pair, a disabled user,
 * or a user of an account whose key is gone is unknown; a change is seen when the `iam` counter moves; and when the
 * counter cannot be read for over STALE_MS, sub-user keys are refused with 503 (fail closed) while the root and
 * account keys keep working. Time is Vitest's fake clock (no waiting).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeyIndex, STALE_MS } from '../../src/auth/key-index.js';
import { isKodoError } from '../../src/errors.js';
import type { IamSnapshot } from '../../src/ports/iam.js';
import type { MetaStore } from '../../src/ports/meta.js';

const ROOT = { accessKey: 'root-ak', secretKey: 'root-sk' };
const allow = (action: string): string => JSON.stringify([{ action: [action], resource: ['*'], effect: 'Allow' }]);

function snapshot(): IamSnapshot {
  return {
    keys: [
      { accessKey: 'sub-ak', secretKey: 'sub-sk', owner: 'acct-ak', userId: 'u1', enabled: true },
      { accessKey: 'off-ak', secretKey: 'off-sk', owner: 'acct-ak', userId: 'u1', enabled: false },
      { accessKey: 'offuser-ak', secretKey: 'x', owner: 'acct-ak', userId: 'u2', enabled: true },
      { accessKey: 'orphan-ak', secretKey: 'x', owner: 'gone-ak', userId: 'u3', enabled: true },
    ],
    users: [
      { id: 'u1', owner: 'acct-ak', alias: 'alice', iuid: 2 ** 48 + 1, enabled: true },
      { id: 'u2', owner: 'acct-ak', alias: 'bob', iuid: 2 ** 48 + 2, enabled: false },
      { id: 'u3', owner: 'gone-ak', alias: 'carol', iuid: 2 ** 48 + 3, enabled: true },
    ],
    groups: [
      { id: 'g1', alias: 'readers', enabled: true },
      { id: 'g2', alias: 'off', enabled: false },
    ],
    policies: [
      { id: 'p1', alias: 'get', statement: allow('kodo/Get'), enabled: true },
      { id: 'p2', alias: 'list', statement: allow('kodo/List'), enabled: true },
      { id: 'p3', alias: 'del', statement: allow('kodo/Delete'), enabled: true },
      { id: 'p4', alias: 'disabled', statement: allow('kodo/Stat'), enabled: false },
    ],
    links: [
      { kind: 'user-policy', fromId: 'u1', toId: 'p1' },
      { kind: 'user-policy', fromId: 'u1', toId: 'p4' },
      { kind: 'group-user', fromId: 'g1', toId: 'u1' },
      { kind: 'group-policy', fromId: 'g1', toId: 'p2' },
      { kind: 'group-user', fromId: 'g2', toId: 'u1' },
      { kind: 'group-policy', fromId: 'g2', toId: 'p3' },
    ],
  };
}

let counter = 0;
let failing = false;
let snap = snapshot();
const meta = {
  listAccessKeys: async () => [{ accessKey: 'acct-ak', secretKey: 'acct-sk', ctime: 0 }],
  changeCount: async (topic: string) => {
    if (failing) throw new Error('database down');
    return topic === 'iam' ? counter : 0;
  },
  iam: { enforcementSnapshot: async () => snap },
} as unknown as MetaStore;

describe('sub-user keys in the key index', () => {
  let index: KeyIndex;
  beforeEach(async () => {
    vi.useFakeTimers();
    counter = 0;
    failing = false;
    snap = snapshot();
    index = new KeyIndex(meta, ROOT);
    await index.start();
  });
  afterEach(() => {
    index.stop();
    vi.useRealTimers();
  });

  it('an enabled pair of an enabled user: its secret, its account, its own and its enabled groups’ enabled policies', () => {
    expect(index.secretOf('sub-ak')).toBe('sub-sk');
    expect(index.accountOf('sub-ak')).toBe('acct-ak');
    expect(index.isSubUser('sub-ak')).toBe(true);
    expect(index.isAccountKey('sub-ak')).toBe(false);
    expect(index.isAccountKey('acct-ak')).toBe(true);
    const p = index.principalOf('sub-ak');
    expect(p?.kind).toBe('user');
    const policies = p?.kind === 'user' ? p.policies.map((x) => [x.alias, x.via]) : [];
    expect(policies).toEqual([
      ['get', 'user'],
      ['list', { group: 'readers' }],
    ]);
    expect(index.principalOf('acct-ak')).toEqual({ kind: 'owner', owner: 'acct-ak' });
    expect(index.principalOf('root-ak')).toEqual({ kind: 'root' });
  });

  it('a disabled pair, a disabled user, a user of a deleted account: unknown', () => {
    for (const ak of ['off-ak', 'offuser-ak', 'orphan-ak', 'nobody']) {
      expect(index.secretOf(ak), ak).toBeUndefined();
      expect(index.principalOf(ak), ak).toBeUndefined();
    }
  });

  it('a change is seen when the iam counter moves (the next poll)', async () => {
    snap = { ...snap, keys: snap.keys.map((k) => (k.accessKey === 'sub-ak' ? { ...k, enabled: false } : k)) };
    await vi.advanceTimersByTimeAsync(300);
    expect(index.secretOf('sub-ak')).toBe('sub-sk'); // the counter did not move: no reload
    counter++;
    await vi.advanceTimersByTimeAsync(300);
    expect(index.secretOf('sub-ak')).toBeUndefined();
  });

  it('fail closed: counters unreadable for over STALE_MS → 503 for sub-user keys, root and accounts unaffected', async () => {
    failing = true;
    await vi.advanceTimersByTimeAsync(STALE_MS - 500);
    expect(index.secretOf('sub-ak')).toBe('sub-sk');
    await vi.advanceTimersByTimeAsync(1000);
    let caught: unknown;
    try {
      index.secretOf('sub-ak');
    } catch (err) {
      caught = err;
    }
    expect(isKodoError(caught, 'iamUnavailable') && caught.status).toBe(503);
    expect(() => index.principalOf('sub-ak')).toThrow();
    expect(index.secretOf('root-ak')).toBe('root-sk');
    expect(index.secretOf('acct-ak')).toBe('acct-sk');
    failing = false;
    await vi.advanceTimersByTimeAsync(300);
    expect(index.secretOf('sub-ak')).toBe('sub-sk');
  });
});
