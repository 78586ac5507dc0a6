/**
 * Process identities (workers/identity.ts) in a cluster: the host part names the pid namespace too, so a node on
 * another machine (or container) with the same host name and even the same pid is judged by its lease, never by
 * this machine's pids.
 */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { newIdentity, parseOwner, processGone } from '../../src/workers/identity.js';

describe('process identity', () => {
  it('owner = <host name>@<pid space>:<pid>:<nonce>, parsed back', () => {
    const me = newIdentity();
    expect(me.host).toMatch(new RegExp(`^${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}@[0-9a-f]{8}$`));
    expect(parseOwner(me.owner)).toEqual({ host: me.host, pid: process.pid, tag: me.tag });
    expect(newIdentity().host).toBe(me.host);
  });

  it('a process of another pid space with our host name and pid is alive until its lease lapses', () => {
    const me = newIdentity();
    const twin = `${hostname()}@00000000:${process.pid}:abcdef`;
    const lease = { name: `process:${twin}`, owner: twin, expiresMs: 10_000, acquiredMs: 0 };
    expect(processGone(lease, 9_999, 0, me)).toBe(false);
    expect(processGone(lease, 10_000, 0, me)).toBe(true);
    // The same owner in our own pid space, not running here: gone at once.
    const ghost = `${me.host}:${process.pid}:abcdef`;
    expect(processGone({ ...lease, name: `process:${ghost}`, owner: ghost }, 0, 0, me)).toBe(true);
  });
});
