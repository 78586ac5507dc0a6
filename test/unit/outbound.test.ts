/**
 * Outbound client, SSRF guard and upload callback (docs/development/kodo-protocol.md §2.6, §4.3). All traffic stays on
 * 127.0.0.1 / localhost / ::1: servers listen on port 0; forbidden targets are refused before connecting.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import qiniu from 'qiniu';
import { afterEach, describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import { runUploadCallback, splitCallbackUrls } from '../../src/objects/callback.js';
import { OutboundError, outboundRequest, outboundStream } from '../../src/outbound/client.js';
import {
  addressCategory,
  checkAddress,
  isAllowedAddress,
  isForbiddenAddress,
  parseAllowList,
} from '../../src/outbound/guard.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface TestServer {
  base: string;
  port: number;
  seen: Seen[];
}

const servers: http.Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

/** Starts a server on `host`:0; `handler` null → never answers. */
async function startServer(
  handler: ((req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) | null,
  host = '127.0.0.1',
): Promise<TestServer> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler?.(req, res, body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const h = host.includes(':') ? `[${host}]` : host;
  return { base: `http://${h}:${port}`, port, seen };
}

const json = (res: http.ServerResponse, status: number, value: unknown): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(value));
};

const NONE = { allow: [] as string[] };
const LOOPBACK = { allow: ['127.0.0.1/32'] };
const base = { timeoutMs: 5000, maxBodyBytes: 1 << 20 };

async function rejection(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundError);
    return err as OutboundError;
  }
  throw new Error('expected a rejection');
}

describe('address classification', () => {
  const forbidden = [
    '127.0.0.1',
    '127.255.255.254',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '[::ffff:127.0.0.1]',
    '::127.0.0.1',
    '::ffff:0:7f00:1',
    '169.254.169.254',
    '169.254.0.1',
    '100.100.100.200',
    'fd00:ec2::254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '::',
    '[::]',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    'fd00::1',
    'fc00::1',
    'fe80::1',
    'fe80::1%eth0',
    'fec0::1',
    '224.0.0.1',
    '239.255.255.250',
    'ff02::1',
    '255.255.255.255',
    '240.0.0.1',
    '198.18.0.1',
    '198.19.255.255',
    '192.0.0.170',
    '100::1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1',
    '2002:7f00:1::1',
    '2002:a00:1::',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    'not-an-ip',
    '',
  ];
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '2001:4860:4860::8888',
    '2606:4700:4700::1111',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.255.0.1',
    '192.0.2.1',
    '198.51.100.1',
    '203.0.113.5',
    '2001:db8::1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.255',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ];

  it.each(forbidden)('%s is forbidden', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
    expect(addressCategory(ip)).not.toBeNull();
  });

  it.each(allowed)('%s is allowed', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
    expect(addressCategory(ip)).toBeNull();
  });

  it('names the category, including the embedded IPv4 address', () => {
    expect(addressCategory('127.0.0.1')).toBe('loopback');
    expect(addressCategory('::ffff:7f00:1')).toBe('loopback (IPv4-mapped 127.0.0.1)');
    expect(addressCategory('169.254.169.254')).toBe('cloud metadata');
    expect(addressCategory('fd00:ec2::254')).toBe('cloud metadata');
    expect(addressCategory('100.64.0.1')).toBe('carrier-grade NAT');
    expect(addressCategory('2002:7f00:1::1')).toBe('loopback (6to4 127.0.0.1)');
  });
});

describe('allow list', () => {
  it('parses comma/space separated CIDRs, addresses and host names', () => {
    expect(parseAllowList(undefined)).toEqual([]);
    expect(parseAllowList('  ')).toEqual([]);
    expect(parseAllowList('10.0.0.0/8, 127.0.0.1  ::1,[::1]/128 App.Internal.')).toEqual([
      '10.0.0.0/8',
      '127.0.0.1/32',
      '::1/128',
      '::1/128',
      'app.internal',
    ]);
  });

  it.each(['10.0.0.0/33', '::1/129', 'bad host!', 'a/b', '10.0.0.0/x'])('rejects %s naming the setting', (entry) => {
    expect(() => parseAllowList(entry)).toThrow(/GRANARY_OUTBOUND_ALLOW/);
  });

  it('exempts by CIDR, by host name, and IPv4-mapped forms of an allowed IPv4', () => {
    expect(isAllowedAddress('127.0.0.1', '127.0.0.1', LOOPBACK)).toBe(true);
    expect(isAllowedAddress('::ffff:127.0.0.1', 'x', LOOPBACK)).toBe(true);
    expect(isAllowedAddress('127.0.0.2', '127.0.0.2', LOOPBACK)).toBe(false);
    expect(isAllowedAddress('10.9.8.7', 'db.internal', { allow: ['10.0.0.0/8'] })).toBe(true);
    expect(isAllowedAddress('10.9.8.7', 'App.Internal.', { allow: ['app.internal'] })).toBe(true);
    expect(isAllowedAddress('10.9.8.7', 'other.internal', { allow: ['app.internal'] })).toBe(false);
    expect(isAllowedAddress('::1', '::1', { allow: ['::1/128'] })).toBe(true);
    expect(isAllowedAddress('8.8.8.8', 'dns.google', NONE)).toBe(true);
  });

  it('admits metadata endpoints only by an exact entry or host name, not by a broad CIDR', () => {
    expect(isAllowedAddress('169.254.169.254', 'x', { allow: ['169.254.0.0/16'] })).toBe(false);
    expect(isAllowedAddress('169.254.1.1', 'x', { allow: ['169.254.0.0/16'] })).toBe(true);
    expect(isAllowedAddress('100.100.100.200', 'x', { allow: ['100.64.0.0/10'] })).toBe(false);
    expect(isAllowedAddress('169.254.169.254', 'x', { allow: ['169.254.169.254'] })).toBe(true);
    expect(isAllowedAddress('169.254.169.254', 'metadata.internal', { allow: ['metadata.internal'] })).toBe(true);
  });

  it('checkAddress throws a forbidden-address error naming GRANARY_OUTBOUND_ALLOW', () => {
    let err: unknown;
    try {
      checkAddress('10.0.0.1', 'intranet.example', NONE);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OutboundError);
    expect((err as OutboundError).reason).toBe('forbidden-address');
    expect((err as OutboundError).message).toMatch(/GRANARY_OUTBOUND_ALLOW/);
    expect((err as OutboundError).message).toMatch(/10\.0\.0\.1 \[private\]/);
    expect(() => checkAddress('8.8.8.8', 'dns.google', NONE)).not.toThrow();
  });
});

describe('outboundRequest', () => {
  it('refuses loopback by default without connecting, naming GRANARY_OUTBOUND_ALLOW', async () => {
    const srv = await startServer((_req, res) => json(res, 200, {}));
    const err = await rejection(outboundRequest({ url: `${srv.base}/x`, policy: NONE, ...base }));
    expect(err.reason).toBe('forbidden-address');
    expect(err.message).toMatch(/GRANARY_OUTBOUND_ALLOW/);
    expect(err.message).toMatch(/127\.0\.0\.1/);
    expect(srv.seen).toHaveLength(0);
  });

  it('refuses a host name resolving to loopback (the lookup hook)', async () => {
    const srv = await startServer((_req, res) => json(res, 200, {}));
    const err = await rejection(outboundRequest({ url: `http://localhost:${srv.port}/`, policy: NONE, ...base }));
    expect(err.reason).toBe('forbidden-address');
    expect(err.message).toMatch(/localhost → /);
    expect(err.message).toMatch(/GRANARY_OUTBOUND_ALLOW/);
    expect(srv.seen).toHaveLength(0);
  });

  it('refuses ::1 by default', async () => {
    const srv = await startServer((_req, res) => json(res, 200, {}), '::1');
    const err = await rejection(outboundRequest({ url: `${srv.base}/`, policy: NONE, ...base }));
    expect(err.reason).toBe('forbidden-address');
    expect(srv.seen).toHaveLength(0);
  });

  it('connects when allowed by CIDR and returns status, headers and body', async () => {
    const srv = await startServer((_req, res, body) => json(res, 201, { echo: body }));
    const res = await outboundRequest({
      url: `${srv.base}/path?q=1`,
      method: 'post',
      headers: { 'X-Test': 'yes' },
      body: 'hello',
      policy: LOOPBACK,
      ...base,
    });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(res.body.toString())).toEqual({ echo: 'hello' });
    expect(srv.seen[0]).toMatchObject({ method: 'POST', url: '/path?q=1', body: 'hello' });
    expect(srv.seen[0]?.headers['x-test']).toBe('yes');
    expect(srv.seen[0]?.headers['content-length']).toBe('5');
  });

  it('connects to ::1 when allowed by ::1/128', async () => {
    const srv = await startServer((_req, res) => json(res, 200, { ok: true }), '::1');
    const res = await outboundRequest({ url: `${srv.base}/`, policy: { allow: ['::1/128'] }, ...base });
    expect(res.status).toBe(200);
  });

  it('connects when the host name is in the allow list', async () => {
    const srv = await startServer((_req, res) => json(res, 200, { ok: true }));
    const res = await outboundRequest({
      url: `http://localhost:${srv.port}/`,
      policy: { allow: parseAllowList('LocalHost.') },
      ...base,
    });
    expect(res.status).toBe(200);
    expect(srv.seen).toHaveLength(1);
  });

  it.each(['ftp://127.0.0.1/x', 'not a url', 'file:///etc/passwd', '/relative'])('rejects %s as bad-url', async (url) => {
    const err = await rejection(outboundRequest({ url, policy: LOOPBACK, ...base }));
    expect(err.reason).toBe('bad-url');
  });

  it('times out on a server that never answers', async () => {
    const srv = await startServer(null);
    const err = await rejection(outboundRequest({ url: `${srv.base}/`, policy: LOOPBACK, timeoutMs: 200, maxBodyBytes: 100 }));
    expect(err.reason).toBe('timeout');
    expect(err.message).toMatch(/200 ms/);
    expect(srv.seen).toHaveLength(1);
  });

  it('times out on a body that never ends', async () => {
    const srv = await startServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('partial');
    });
    const err = await rejection(outboundRequest({ url: `${srv.base}/`, policy: LOOPBACK, timeoutMs: 200, maxBodyBytes: 100 }));
    expect(err.reason).toBe('timeout');
  });

  it('refuses a body over maxBodyBytes (declared and chunked)', async () => {
    const big = 'x'.repeat(5000);
    const declared = await startServer((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(big.length) });
      res.end(big);
    });
    const chunked = await startServer((_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 50; i++) res.write(big.slice(0, 100));
      res.end();
    });
    for (const srv of [declared, chunked]) {
      const err = await rejection(outboundRequest({ url: `${srv.base}/`, policy: LOOPBACK, timeoutMs: 5000, maxBodyBytes: 1000 }));
      expect(err.reason).toBe('too-large');
      expect(err.message).toMatch(/1000 bytes/);
    }
    const ok = await outboundRequest({ url: `${declared.base}/`, policy: LOOPBACK, timeoutMs: 5000, maxBodyBytes: 5000 });
    expect(ok.body.length).toBe(5000);
  });

  it('reports connection failures as network errors', async () => {
    const srv = await startServer(null);
    servers.splice(0).forEach((s) => {
      s.closeAllConnections();
      s.close();
    });
    await new Promise((r) => setImmediate(r));
    const err = await rejection(outboundRequest({ url: `${srv.base}/`, policy: LOOPBACK, ...base }));
    expect(err.reason).toBe('network');
  });

  describe('redirects', () => {
    it('returns a 3xx as is when maxRedirects is 0 (default)', async () => {
      const srv = await startServer((_req, res) => {
        res.writeHead(302, { Location: 'http://127.0.0.2:1/' });
        res.end();
      });
      const res = await outboundRequest({ url: `${srv.base}/`, policy: LOOPBACK, ...base });
      expect(res.status).toBe(302);
    });

    it.each(['http://127.0.0.2:1/', 'http://[::1]:1/', 'http://[::ffff:127.0.0.1]:1/', 'http://[::ffff:127.0.0.2]:1/'])(
      'refuses a redirect to the forbidden %s',
      async (location) => {
        const srv = await startServer((_req, res) => {
          res.writeHead(302, { Location: location });
          res.end();
        });
        const err = await rejection(
          outboundRequest({ url: `${srv.base}/`, policy: { allow: ['127.0.0.1/32'] }, maxRedirects: 3, ...base }),
        );
        if (location.includes('ffff:127.0.0.1')) {
          // ::ffff:127.0.0.1 is exempted by 127.0.0.1/32 (same host); nothing listens on port 1.
          expect(err.reason).toBe('network');
        } else {
          expect(err.reason).toBe('forbidden-address');
          expect(err.message).toMatch(/GRANARY_OUTBOUND_ALLOW/);
        }
      },
    );

    it('re-checks every hop: a name exemption does not cover a redirect to the bare address', async () => {
      const srv = await startServer((req, res) => {
        if (req.url === '/start') res.writeHead(302, { Location: `http://127.0.0.1:${srv.port}/next` });
        else res.writeHead(204);
        res.end();
      });
      const err = await rejection(
        outboundRequest({ url: `http://localhost:${srv.port}/start`, policy: { allow: ['localhost'] }, maxRedirects: 1, ...base }),
      );
      expect(err.reason).toBe('forbidden-address');
      expect(srv.seen.map((s) => s.url)).toEqual(['/start']);
    });

    it('follows allowed redirects, switching POST to GET on 302 and dropping Authorization across origins', async () => {
      const target = await startServer((req, res) => json(res, 200, { at: req.url }));
      const srv = await startServer((req, res) => {
        if (req.url === '/start') {
          res.writeHead(307, { Location: '/second' });
        } else {
          res.writeHead(302, { Location: `http://localhost:${target.port}/final` });
        }
        res.end();
      });
      const res = await outboundRequest({
        url: `${srv.base}/start`,
        method: 'POST',
        body: 'payload',
        headers: { Authorization: 'secret' },
        policy: { allow: ['127.0.0.1/32'] },
        maxRedirects: 2,
        ...base,
      });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body.toString())).toEqual({ at: '/final' });
      expect(srv.seen.map((s) => [s.method, s.url, s.body, s.headers.authorization])).toEqual([
        ['POST', '/start', 'payload', 'secret'],
        ['POST', '/second', 'payload', 'secret'],
      ]);
      expect(target.seen[0]).toMatchObject({ method: 'GET', url: '/final', body: '' });
      expect(target.seen[0]?.headers.authorization).toBeUndefined();
    });

    it('fails with too-many-redirects', async () => {
      const srv = await startServer((_req, res) => {
        res.writeHead(301, { Location: '/again' });
        res.end();
      });
      const err = await rejection(outboundRequest({ url: `${srv.base}/`, policy: LOOPBACK, maxRedirects: 2, ...base }));
      expect(err.reason).toBe('too-many-redirects');
      expect(srv.seen).toHaveLength(3);
    });
  });
});

describe('outboundStream', () => {
  it('hands over the body as a stream', async () => {
    const srv = await startServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('streamed body');
    });
    const r = await outboundStream({ url: `${srv.base}/s`, policy: LOOPBACK, ...base });
    expect(r.status).toBe(200);
    expect(r.url).toBe(`${srv.base}/s`);
    const chunks: Buffer[] = [];
    for await (const c of r.stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('streamed body');
  });

  it('applies the guard and the byte limit', async () => {
    const srv = await startServer((_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 20; i++) res.write('y'.repeat(100));
      res.end();
    });
    const refused = await rejection(outboundStream({ url: `${srv.base}/`, policy: NONE, ...base }));
    expect(refused.reason).toBe('forbidden-address');
    const r = await outboundStream({ url: `${srv.base}/`, policy: LOOPBACK, timeoutMs: 5000, maxBodyBytes: 500 });
    const err = await rejection(
      (async () => {
        for await (const _c of r.stream) {
          // drain
        }
      })(),
    );
    expect(err.reason).toBe('too-large');
  });
});

describe('runUploadCallback', () => {
  const ak = 'test-ak';
  const sk = 'test-sk';
  const mac = new qiniu.auth.digest.Mac(ak, sk);
  const cb = { accessKey: ak, secretKey: sk, policy: LOOPBACK, timeoutMs: 2000, maxBodyBytes: 1 << 16 };

  it('splits callbackUrl on ;', () => {
    expect(splitCallbackUrls(' http://a/x ;; http://b/y; ')).toEqual(['http://a/x', 'http://b/y']);
  });

  it('POSTs a signed form body and returns the JSON answer', async () => {
    const srv = await startServer((_req, res) => json(res, 200, { ok: 1, key: 'k' }));
    const url = `${srv.base}/cb?from=granary`;
    const body = 'key=k&hash=Fh8x&fsize=3';
    const result = await runUploadCallback({
      ...cb,
      callbackUrl: url,
      body,
      bodyType: 'application/x-www-form-urlencoded',
    });
    expect(result).toEqual({ url, status: 200, json: { ok: 1, key: 'k' }, bodyText: '{"ok":1,"key":"k"}' });
    const seen = srv.seen[0];
    expect(seen?.method).toBe('POST');
    expect(seen?.url).toBe('/cb?from=granary');
    expect(seen?.body).toBe(body);
    expect(seen?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(seen?.headers['user-agent']).toBe('qiniu-callback/1.0');
    expect(seen?.headers.host).toBe(`127.0.0.1:${srv.port}`);
    const auth = String(seen?.headers.authorization);
    expect(auth).toMatch(/^QBox test-ak:/);
    expect(qiniu.util.isQiniuCallback(mac, url, body, auth)).toBe(true);
    expect(qiniu.util.isQiniuCallback(mac, url, 'key=other', auth)).toBe(false);
  });

  it('POSTs a signed JSON body, with callbackHost as Host and the default body type when empty', async () => {
    const srv = await startServer((_req, res) => json(res, 200, { fine: true }));
    const url = `${srv.base}/json-cb`;
    const body = '{"key":"k","size":3}';
    const result = await runUploadCallback({ ...cb, callbackUrl: url, callbackHost: 'app.example.com', body, bodyType: 'application/json' });
    expect(result.json).toEqual({ fine: true });
    const seen = srv.seen[0];
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.headers.host).toBe('app.example.com');
    expect(qiniu.util.isQiniuCallback(mac, url, body, String(seen?.headers.authorization))).toBe(true);

    await runUploadCallback({ ...cb, callbackUrl: url, body: 'a=1', bodyType: '' });
    expect(srv.seen[1]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
  });

  it('tries the next URL when the first fails', async () => {
    const srv = await startServer((req, res) => {
      if (req.url === '/fail') json(res, 500, { error: 'boom' });
      else json(res, 200, { second: true });
    });
    const result = await runUploadCallback({
      ...cb,
      callbackUrl: `${srv.base}/fail;${srv.base}/ok`,
      body: 'a=1',
      bodyType: 'application/x-www-form-urlencoded',
    });
    expect(result.url).toBe(`${srv.base}/ok`);
    expect(result.json).toEqual({ second: true });
    expect(srv.seen.map((s) => s.url)).toEqual(['/fail', '/ok']);
  });

  it('counts a non-JSON 200 answer as a failure (579)', async () => {
    const srv = await startServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('OK');
    });
    const err = await runUploadCallback({ ...cb, callbackUrl: `${srv.base}/cb`, body: 'a=1', bodyType: '' }).catch((e: unknown) => e);
    expect(isKodoError(err)).toBe(true);
    expect((err as { status: number }).status).toBe(579);
    expect((err as Error).message).toMatch(/not JSON/);
  });

  it('throws 579 naming every URL failure when all fail', async () => {
    const srv = await startServer((req, res) => {
      if (req.url === '/500') json(res, 500, {});
      else if (req.url === '/text') res.end('nope');
      // '/hang' never answers
    });
    const urls = [`${srv.base}/500`, `${srv.base}/text`, 'http://127.0.0.2:9/forbidden', `${srv.base}/hang`, 'ftp://x/'];
    const err = await runUploadCallback({
      ...cb,
      timeoutMs: 300,
      callbackUrl: urls.join(';'),
      body: 'a=1',
      bodyType: 'application/x-www-form-urlencoded',
    }).catch((e: unknown) => e);
    expect(isKodoError(err)).toBe(true);
    const e = err as { status: number; message: string; kind: string };
    expect(e.status).toBe(579);
    expect(e.kind).toBe('callbackFailed');
    expect(e.message).toContain(`${srv.base}/500: HTTP 500`);
    expect(e.message).toContain(`${srv.base}/text: HTTP 200 but the answer is not JSON`);
    expect(e.message).toMatch(/http:\/\/127\.0\.0\.2:9\/forbidden: refused by the outbound guard.*GRANARY_OUTBOUND_ALLOW/);
    expect(e.message).toContain(`${srv.base}/hang: timed out after 300 ms`);
    expect(e.message).toMatch(/ftp:\/\/x\/: .*invalid URL/);
  });

  it('throws 579 when no URL is given', async () => {
    const err = await runUploadCallback({ ...cb, callbackUrl: ' ; ', body: '', bodyType: '' }).catch((e: unknown) => e);
    expect((err as { status: number }).status).toBe(579);
  });
});
