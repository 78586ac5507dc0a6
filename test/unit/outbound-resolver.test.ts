/**
 * The outbound guard against private networks (issue "Fetch … without opening a door to private networks"):
 * the address classifier as a pure function over every private range, and the client's two test seams —
 * `resolve` (a made-up host name answers any address, no DNS) and `beforeConnect` (the connect step; counted to
 * prove a refused target never reaches it, and vetoing anything outside loopback so no test can connect off
 * this machine). Servers listen on 127.0.0.1:0 only.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  OutboundError,
  outboundRequest,
  outboundStream,
  type OutboundConnectTarget,
  type OutboundPolicy,
  type ResolvedAddress,
} from '../../src/outbound/client.js';
import { addressCategory, isAllowedAddress, isForbiddenAddress } from '../../src/outbound/guard.js';

const servers: http.Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

interface Local {
  port: number;
  base: string;
  connections: () => number;
  requests: Array<{ url: string; host: string | undefined }>;
}

/** A server on 127.0.0.1:0 counting connections; `handler` answers (default: 200 "ok"). */
async function local(handler?: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Local> {
  let connections = 0;
  const requests: Local['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ url: req.url ?? '', host: req.headers.host });
    if (handler) handler(req, res);
    else res.end('ok');
  });
  server.on('connection', () => void connections++);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return { port, base: `http://127.0.0.1:${port}`, connections: () => connections, requests };
}

const isLoopback = (a: string): boolean => /^127\./.test(a) || a === '::1' || /^::ffff:127\./i.test(a);
const family = (address: string): number => (address.includes(':') ? 6 : 4);

/** A policy with both seams: `table` answers host names; every connect step is recorded, non-loopback vetoed. */
function seamed(allow: string[], table: Record<string, string[]>): { policy: OutboundPolicy; connects: OutboundConnectTarget[] } {
  const connects: OutboundConnectTarget[] = [];
  const policy: OutboundPolicy = {
    allow,
    resolve: async (hostname): Promise<ResolvedAddress[]> => {
      const answer = table[hostname];
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return answer.map((address) => ({ address, family: family(address) }));
    },
    beforeConnect: (target) => {
      connects.push(target);
      if (!target.addresses.every(isLoopback)) throw new Error(`test veto: ${target.addresses.join(', ')}`);
    },
  };
  return { policy, connects };
}

const limits = { timeoutMs: 5000, maxBodyBytes: 1 << 20 };

async function rejection(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundError);
    return err as OutboundError;
  }
  throw new Error('expected a rejection');
}

describe('classifier: the ranges a fetch must never reach (pure function)', () => {
  const forbidden: Array<[string, string]> = [
    ['10.0.0.0', 'private'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.0', 'private'],
    ['172.20.1.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.0', 'private'],
    ['192.168.255.255', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.170.2', 'cloud metadata'],
    ['169.254.0.0', 'link-local'],
    ['169.254.255.255', 'link-local'],
    ['100.64.0.0', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified ("this network")'],
    ['0.255.255.255', 'unspecified ("this network")'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.255', 'loopback'],
    ['fc00::', 'unique-local (private)'],
    ['fc00::1', 'unique-local (private)'],
    ['FD12:3456:789a::1', 'unique-local (private)'],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local (private)'],
    ['fe80::', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['[fe80::abcd]', 'link-local'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['::ffff:10.0.0.1', 'private (IPv4-mapped 10.0.0.1)'],
    ['::ffff:a00:1', 'private (IPv4-mapped 10.0.0.1)'],
    ['::FFFF:192.168.1.1', 'private (IPv4-mapped 192.168.1.1)'],
    ['::ffff:169.254.169.254', 'cloud metadata (IPv4-mapped 169.254.169.254)'],
    ['::ffff:0.0.0.0', 'unspecified ("this network") (IPv4-mapped 0.0.0.0)'],
    ['::ffff:0:a00:1', 'private (IPv4-translated 10.0.0.1)'],
    ['::10.0.0.1', 'private (IPv4-compatible 10.0.0.1)'],
    ['64:ff9b::a00:1', 'private (NAT64 10.0.0.1)'],
    ['64:ff9b::10.0.0.1', 'private (NAT64 10.0.0.1)'],
    ['64:ff9b::ac10:1', 'private (NAT64 172.16.0.1)'],
    ['64:ff9b::c0a8:101', 'private (NAT64 192.168.1.1)'],
    ['64:ff9b::6440:1', 'carrier-grade NAT (NAT64 100.64.0.1)'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata (NAT64 169.254.169.254)'],
    ['64:ff9b::7f00:1', 'loopback (NAT64 127.0.0.1)'],
    ['2002:a00:1::1', 'private (6to4 10.0.0.1)'],
    ['2002:a9fe:a9fe::', 'cloud metadata (6to4 169.254.169.254)'],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffa', 'private (Teredo 10.0.0.5)'],
  ];
  it.each(forbidden)('%s is forbidden as %s', (ip, category) => {
    expect(isForbiddenAddress(ip)).toBe(true);
    expect(addressCategory(ip)).toBe(category);
  });

  // Just outside each range: public.
  const publicNeighbours = [
    '9.255.255.255',
    '11.0.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '1.0.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '2606:4700::1',
    '::ffff:11.0.0.1',
    '64:ff9b::b00:1',
    '2002:b00:1::1',
  ];
  it.each(publicNeighbours)('%s is public', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
    expect(addressCategory(ip)).toBeNull();
  });

  it('allow-list entries admit what they name, and no more', () => {
    // An IPv4 CIDR admits the IPv4-mapped form of its addresses (the same host), not a NAT64 one (another host).
    expect(isAllowedAddress('::ffff:10.1.2.3', 'x', { allow: ['10.0.0.0/8'] })).toBe(true);
    expect(isAllowedAddress('64:ff9b::a01:203', 'x', { allow: ['10.0.0.0/8'] })).toBe(false);
    // Metadata endpoints need an exact entry, even when reached through an IPv6 form.
    expect(isAllowedAddress('64:ff9b::a9fe:a9fe', 'x', { allow: ['64:ff9b::/96'] })).toBe(false);
    expect(isAllowedAddress('::ffff:169.254.169.254', 'x', { allow: ['169.254.0.0/16'] })).toBe(false);
    expect(isAllowedAddress('::ffff:169.254.169.254', 'x', { allow: ['169.254.169.254'] })).toBe(true);
    // 127.0.0.1/32 does not admit the rest of 127/8 nor ::1.
    expect(isAllowedAddress('127.0.0.2', '127.0.0.2', { allow: ['127.0.0.1/32'] })).toBe(false);
    expect(isAllowedAddress('::1', '::1', { allow: ['127.0.0.1/32'] })).toBe(false);
    // A host name entry admits that name only.
    expect(isAllowedAddress('10.0.0.5', 'internal.example.test', { allow: ['internal.example.test'] })).toBe(true);
    expect(isAllowedAddress('10.0.0.5', 'other.example.test', { allow: ['internal.example.test'] })).toBe(false);
  });
});

describe('the resolve seam: a made-up host name answering private addresses', () => {
  const PRIVATE = [
    '10.0.0.5',
    '172.16.0.1',
    '192.168.1.10',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    'fc00::1',
    'fd00::5',
    'fe80::1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '2002:a00:1::1',
    '127.0.0.1',
    '::1',
  ];

  it.each(PRIVATE)('internal.example.test → %s is refused before the connect step (request and stream)', async (address) => {
    const { policy, connects } = seamed([], { 'internal.example.test': [address] });
    const url = 'http://internal.example.test:8080/latest/meta-data/';
    for (const call of [() => outboundRequest({ url, policy, ...limits }), () => outboundStream({ url, policy, ...limits })]) {
      const err = await rejection(call());
      expect(err.reason).toBe('forbidden-address');
      expect(err.message).toContain(`internal.example.test → ${address} [${addressCategory(address)}]`);
      expect(err.message).toMatch(/GRANARY_OUTBOUND_ALLOW/);
    }
    expect(connects).toEqual([]);
  });

  it('refuses when every answer is private, naming each', async () => {
    const { policy, connects } = seamed([], { 'multi.example.test': ['10.0.0.5', 'fd00::5', '169.254.169.254'] });
    const err = await rejection(outboundRequest({ url: 'http://multi.example.test/', policy, ...limits }));
    expect(err.reason).toBe('forbidden-address');
    expect(err.message).toContain('10.0.0.5 [private], fd00::5 [unique-local (private)], 169.254.169.254 [cloud metadata]');
    expect(connects).toEqual([]);
  });

  it('drops the private answers and connects to the admitted one only (a real connection, by the made-up name)', async () => {
    const srv = await local();
    const { policy, connects } = seamed(['127.0.0.1/32'], { 'internal.example.test': ['10.0.0.5', '127.0.0.1', 'fd00::5'] });
    const res = await outboundRequest({ url: `http://internal.example.test:${srv.port}/via-name`, policy, ...limits });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('ok');
    expect(connects).toEqual([{ host: 'internal.example.test', port: srv.port, addresses: ['127.0.0.1'] }]);
    expect(srv.requests).toEqual([{ url: '/via-name', host: `internal.example.test:${srv.port}` }]);
  });

  it('a host name exemption admits its private answer up to the connect step (where this test vetoes it)', async () => {
    const { policy, connects } = seamed(['internal.example.test'], { 'internal.example.test': ['10.0.0.5'] });
    const err = await rejection(outboundRequest({ url: 'http://internal.example.test/', policy, ...limits }));
    expect(err.reason).toBe('network');
    expect(err.message).toMatch(/test veto: 10\.0\.0\.5/);
    expect(connects).toEqual([{ host: 'internal.example.test', port: 80, addresses: ['10.0.0.5'] }]);
  });

  it('a public answer reaches the connect step (the seam is the real one: vetoed here, never connected)', async () => {
    const { policy, connects } = seamed([], { 'public.example.test': ['203.0.113.7', '10.0.0.5'] });
    const err = await rejection(outboundRequest({ url: 'https://public.example.test/x', policy, ...limits }));
    expect(err.reason).toBe('network');
    expect(connects).toEqual([{ host: 'public.example.test', port: 443, addresses: ['203.0.113.7'] }]);
  });

  it('an IP literal is checked before the connect step, which sees it once per hop', async () => {
    const { policy, connects } = seamed([], {});
    for (const url of ['http://10.0.0.5/', 'http://[fd00::1]:8080/', 'http://[::ffff:192.168.0.1]/', 'http://169.254.169.254/']) {
      expect((await rejection(outboundRequest({ url, policy, ...limits }))).reason).toBe('forbidden-address');
    }
    expect(connects).toEqual([]);
    const srv = await local((req, res) => {
      if (req.url === '/a') res.writeHead(307, { Location: '/b' }).end();
      else res.end('b');
    });
    const allowed = seamed(['127.0.0.1/32'], {});
    const res = await outboundRequest({ url: `${srv.base}/a`, policy: allowed.policy, maxRedirects: 1, ...limits });
    expect(res.body.toString()).toBe('b');
    expect(allowed.connects).toEqual([
      { host: '127.0.0.1', port: srv.port, addresses: ['127.0.0.1'] },
      { host: '127.0.0.1', port: srv.port, addresses: ['127.0.0.1'] },
    ]);
  });

  it('re-checks a redirect to a name resolving privately: only the first hop reaches the connect step', async () => {
    const srv = await local((_req, res) => res.writeHead(302, { Location: 'http://internal.example.test:8080/secret' }).end());
    const { policy, connects } = seamed(['127.0.0.1/32'], { 'internal.example.test': ['10.0.0.5'] });
    const err = await rejection(outboundStream({ url: `${srv.base}/start`, policy, maxRedirects: 3, ...limits }));
    expect(err.reason).toBe('forbidden-address');
    expect(err.message).toContain('internal.example.test → 10.0.0.5 [private]');
    expect(connects.map((c) => c.addresses)).toEqual([['127.0.0.1']]);
  });

  it('a resolver failure or an empty answer is a network error', async () => {
    const { policy, connects } = seamed([], { 'empty.example.test': [] });
    const missing = await rejection(outboundRequest({ url: 'http://missing.example.test/', policy, ...limits }));
    expect(missing.reason).toBe('network');
    expect(missing.message).toMatch(/ENOTFOUND missing\.example\.test/);
    const empty = await rejection(outboundRequest({ url: 'http://empty.example.test/', policy, ...limits }));
    expect(empty.reason).toBe('network');
    expect(empty.message).toMatch(/ENOTFOUND empty\.example\.test/);
    expect(connects).toEqual([]);
  });

  it('without the seams, host names go through dns.lookup (the production path) and reach beforeConnect', async () => {
    const srv = await local();
    const connects: OutboundConnectTarget[] = [];
    const policy: OutboundPolicy = {
      allow: ['localhost'],
      beforeConnect: (t) => {
        connects.push(t);
        if (!t.addresses.every(isLoopback)) throw new Error('test veto');
      },
    };
    const res = await outboundRequest({ url: `http://localhost:${srv.port}/`, policy, ...limits });
    expect(res.status).toBe(200);
    expect(connects).toHaveLength(1);
    expect(connects[0]?.addresses).toContain('127.0.0.1');
    expect(srv.connections()).toBe(1);
  });
});
