import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import qiniu from 'qiniu';
import { describe, it, expect } from 'vitest';
import { KodoError } from '../../src/errors.js';
import { safeEqual, sameSignature } from '../../src/auth/compare.js';
import { verifyManagement, type SignedRequest } from '../../src/auth/management.js';
import { upTokenFromAuthorization, verifyUploadToken } from '../../src/auth/upload-token.js';
import { verifyPrivateDownload } from '../../src/auth/download-token.js';
import { signCallback } from '../../src/auth/callback-sign.js';
import { urlsafeB64Encode, hmacSign } from '../../src/auth/base64.js';

const AK = 'ak';
const SK = 'sk';
const secretOf = (ak: string): string | undefined => (ak === AK ? SK : undefined);
const mac = new qiniu.auth.digest.Mac(AK, SK);
const FORM = 'application/x-www-form-urlencoded';
const JAN_2024 = Date.UTC(2024, 0, 1);

/** Asserts `fn` throws a KodoError of the given kind and status. */
function expectKodo(fn: () => unknown, kind: string, status: number): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KodoError);
    expect((err as KodoError).kind).toBe(kind);
    expect((err as KodoError).status).toBe(status);
    return;
  }
  throw new Error(`expected ${kind} (${status}) to be thrown`);
}

/** A SignedRequest for `url` as a client would send it (Host = URL host, request-target = path + query). */
function req(
  method: string,
  url: string,
  authorization: string | undefined,
  extra: { headers?: IncomingHttpHeaders; body?: string | Buffer } = {},
): SignedRequest {
  const u = new URL(url);
  const headers: IncomingHttpHeaders = { host: u.host, ...extra.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  const body = extra.body === undefined ? undefined : Buffer.from(extra.body);
  return { method, rawUrl: u.pathname + u.search, headers, body };
}

describe('safeEqual', () => {
  it('compares strings', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });
});

describe('sameSignature', () => {
  const expected = hmacSign(SK, 'data'); // URL-safe, 28 characters with one '='
  it('accepts the signature in its URL-safe, standard, padded and bare forms', () => {
    const bare = expected.replace(/=+$/, '');
    expect(sameSignature(expected, expected)).toBe(true);
    expect(sameSignature(bare, expected)).toBe(true);
    expect(sameSignature(expected.replace(/-/g, '+').replace(/_/g, '/'), expected)).toBe(true);
    expect(sameSignature(`${bare}==`, expected)).toBe(true);
  });
  it('refuses any other text, shorter, longer or of another alphabet', () => {
    const bare = expected.replace(/=+$/, '');
    const flipped = `${bare.slice(0, 5)}${bare[5] === 'A' ? 'B' : 'A'}${bare.slice(6)}`;
    expect(sameSignature(flipped, expected)).toBe(false);
    expect(sameSignature(bare.slice(0, -1), expected)).toBe(false);
    expect(sameSignature(`${bare}A`, expected)).toBe(false);
    expect(sameSignature('', expected)).toBe(false);
    // A character past Latin-1 whose low byte is a base64 character does not pass for that character.
    expect(sameSignature(`${bare.slice(0, -1)}${String.fromCharCode(0x100 + bare.charCodeAt(bare.length - 1))}`, expected)).toBe(false);
  });
});

describe('docs/development/kodo-protocol.md §2.8 vectors', () => {
  const stat = 'http://rs.example.com/stat/YmtOOmtleQ==';
  const dateHeaders = { 'content-type': FORM, 'x-qiniu-date': '20240101T000000Z' };

  it('QBox, no body', () => {
    const auth = 'QBox ak:hDejJLgJzaYuN8afra9ihJf5oPk=';
    expect(qiniu.util.generateAccessToken(mac, stat)).toBe(auth);
    expect(verifyManagement(req('GET', stat, auth), secretOf, JAN_2024)).toEqual({ accessKey: AK, scheme: 'QBox' });
  });

  it('QBox, pfop form body', () => {
    const url = 'http://api.example.com/pfop/';
    const body = 'bucket=b&key=k&fops=avinfo';
    const auth = 'QBox ak:Pu6rS0K0lr1fcF1VzXGawtTp0Fo=';
    expect(qiniu.util.generateAccessToken(mac, url, body)).toBe(auth);
    const r = req('POST', url, auth, { headers: { 'content-type': FORM }, body });
    expect(verifyManagement(r, secretOf, JAN_2024).scheme).toBe('QBox');
  });

  it('Qiniu, GET with X-Qiniu-Date', () => {
    const auth = 'Qiniu ak:7bGE4OgKlW04saU4tLy3XFNIZV0=';
    expect(qiniu.util.generateAccessTokenV2(mac, stat, 'GET', FORM, undefined, { 'X-Qiniu-Date': '20240101T000000Z' })).toBe(
      auth,
    );
    const r = req('GET', stat, auth, { headers: dateHeaders });
    expect(verifyManagement(r, secretOf, JAN_2024)).toEqual({ accessKey: AK, scheme: 'Qiniu' });
  });

  it('Qiniu, doubled port (Node SDK) and single port (Go/curl)', () => {
    const url = 'http://127.0.0.1:9000/stat/YmtOOmtleQ==';
    const doubled = 'Qiniu ak:DrC0k0bzlpKFz1NNY07DAg5wOxc=';
    const single = 'Qiniu ak:HLY2iZgxXWZq-F_5Kxiovpf1pDw=';
    expect(qiniu.util.generateAccessTokenV2(mac, url, 'GET', FORM, undefined, { 'X-Qiniu-Date': '20240101T000000Z' })).toBe(
      doubled,
    );
    for (const auth of [doubled, single]) {
      const r = req('GET', url, auth, { headers: dateHeaders });
      expect(r.headers.host).toBe('127.0.0.1:9000');
      expect(verifyManagement(r, secretOf, JAN_2024).scheme).toBe('Qiniu');
    }
  });

  it('Qiniu, POST batch form body', () => {
    const url = 'http://rs.example.com/batch';
    const body = 'op=%2Fstat%2FYjpr';
    const auth = 'Qiniu ak:Q-ZSjjKApB98b8Q5vifbUqFYdvY=';
    expect(qiniu.util.generateAccessTokenV2(mac, url, 'POST', FORM, body)).toBe(auth);
    const r = req('POST', url, auth, { headers: { 'content-type': FORM }, body });
    expect(verifyManagement(r, secretOf, JAN_2024).scheme).toBe('Qiniu');
  });

  it('upload token', () => {
    const encodedPolicy = urlsafeB64Encode('{"scope":"b","deadline":1700000000}');
    const token = `ak:${hmacSign(SK, encodedPolicy)}:${encodedPolicy}`;
    expect(token).toBe('ak:i3uZ6idY92WeSeXyIlAYw3gX9Oo=:eyJzY29wZSI6ImIiLCJkZWFkbGluZSI6MTcwMDAwMDAwMH0=');
    expect(verifyUploadToken(token, secretOf)).toEqual({
      accessKey: AK,
      encodedPolicy,
      policy: { scope: 'b', deadline: 1700000000 },
    });
  });

  it('§2.5 private download example', () => {
    const bm = new qiniu.rs.BucketManager(mac);
    const url = bm.privateDownloadUrl('http://dl.example.com', 'a b.jpg', 1700000000);
    expect(url).toBe('http://dl.example.com/a%20b.jpg?e=1700000000&token=ak:XcxuEnnn8XJy4nl66yY7IY_Ntrs=');
    const u = new URL(url);
    const r = { rawUrl: u.pathname + u.search, headers: { host: u.host } };
    expect(verifyPrivateDownload(r, secretOf, 1700000000)).toEqual({ accessKey: AK });
  });
});

describe('verifyManagement', () => {
  const now = Date.now();
  const date = qiniu.util.formatDateUTC(new Date(now), 'YYYYMMDDTHHmmssZ');

  it('accepts SDK v2 tokens with X-Qiniu-* headers in any case, a body and a non-default port', () => {
    const url = 'http://localhost:8123/v2/buckets/b/objects?marker=a%2Fb&limit=10|x';
    const headers = { 'X-Qiniu-Date': date, 'x-qiniu-META-zz': 'v', 'X-Qiniu-Aa': 'w', 'X-Qiniu-': 'ignored' };
    const body = JSON.stringify({ a: 'é' });
    const auth = qiniu.util.generateAccessTokenV2(mac, url, 'PUT', 'application/json', body, headers);
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const r = req('PUT', url, auth, { headers: { ...lower, 'content-type': 'application/json' }, body });
    expect(verifyManagement(r, secretOf, now)).toEqual({ accessKey: AK, scheme: 'Qiniu' });
  });

  it('follows the Node body rule (text/plain body signed) and the Go rule (text/plain body not signed)', () => {
    const url = 'http://rs.example.com/x';
    const body = 'hello';
    const nodeAuth = qiniu.util.generateAccessTokenV2(mac, url, 'POST', 'text/plain', body);
    const goAuth = qiniu.util.generateAccessTokenV2(mac, url, 'POST', 'text/plain', undefined);
    for (const auth of [nodeAuth, goAuth]) {
      const r = req('POST', url, auth, { headers: { 'content-type': 'text/plain' }, body });
      expect(verifyManagement(r, secretOf, now).accessKey).toBe(AK);
    }
  });

  it('matches the Node SDK when it signs a non-UTF-8 Buffer body (string concatenation = UTF-8 round trip)', () => {
    const url = 'http://rs.example.com/x';
    const body = Buffer.from([0x61, 0xff, 0x62]);
    const auth = qiniu.util.generateAccessTokenV2(mac, url, 'POST', 'text/plain', body as unknown as string);
    const r = req('POST', url, auth, { headers: { 'content-type': 'text/plain' }, body });
    expect(verifyManagement(r, secretOf, now).accessKey).toBe(AK);
  });

  it('never signs an octet-stream body (Node) and rejects a body-less token when the route read a JSON body', () => {
    const url = 'http://rs.example.com/x';
    const octet = qiniu.util.generateAccessTokenV2(mac, url, 'POST', 'application/octet-stream', undefined);
    const r = req('POST', url, octet, { headers: { 'content-type': 'application/octet-stream' }, body: 'bin' });
    expect(verifyManagement(r, secretOf, now).accessKey).toBe(AK);
    const bodiless = qiniu.util.generateAccessTokenV2(mac, url, 'POST', 'application/json', undefined);
    const r2 = req('POST', url, bodiless, { headers: { 'content-type': 'application/json' }, body: '{}' });
    expectKodo(() => verifyManagement(r2, secretOf, now), 'badToken', 401);
  });

  it('accepts QBox with the body omitted (CDN style JSON) and rejects a QBox body on a non-form request', () => {
    const url = 'http://rs.example.com/x';
    const r = req('POST', url, qiniu.util.generateAccessToken(mac, url, ''), {
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(verifyManagement(r, secretOf, now).scheme).toBe('QBox');
    const r2 = { ...r, headers: { ...r.headers, authorization: qiniu.util.generateAccessToken(mac, url, '{"a":1}') } };
    expectKodo(() => verifyManagement(r2, secretOf, now), 'badToken', 401);
  });

  it('uses the raw request-target, not a normalised one', () => {
    const url = 'http://rs.example.com/stat/YmtOOmtleQ==?a=%7C&b=|';
    const auth = qiniu.util.generateAccessTokenV2(mac, url, 'GET', FORM);
    const r = req('GET', url, auth, { headers: { 'content-type': FORM } });
    expect(verifyManagement(r, secretOf, now).accessKey).toBe(AK);
    expectKodo(() => verifyManagement({ ...r, rawUrl: r.rawUrl.replace('%7C', '|') }, secretOf, now), 'badToken', 401);
  });

  it('rejects missing, malformed, unknown and tampered credentials', () => {
    const url = 'http://rs.example.com/stat/YmtOOmtleQ==';
    const good = qiniu.util.generateAccessToken(mac, url);
    expectKodo(() => verifyManagement(req('GET', url, undefined), secretOf, now), 'tokenMissing', 401);
    expectKodo(() => verifyManagement(req('GET', url, ''), secretOf, now), 'tokenMissing', 401);
    for (const bad of ['Bearer ak:x', 'QBox', 'QBox ak', 'QBox :sig', 'QBox ak:', 'QBox ak:a b', 'UpToken ak:x:y']) {
      expectKodo(() => verifyManagement(req('GET', url, bad), secretOf, now), 'badToken', 401);
    }
    expectKodo(() => verifyManagement(req('GET', url, good.replace('ak:', 'zz:')), secretOf, now), 'unknownAccessKey', 401);
    const tampered = good.slice(0, -3) + (good.at(-3) === 'A' ? 'B' : 'A') + good.slice(-2);
    expectKodo(() => verifyManagement(req('GET', url, tampered), secretOf, now), 'badToken', 401);
    expectKodo(() => verifyManagement(req('GET', url + 'x', good), secretOf, now), 'badToken', 401);
    const wrongKey = new qiniu.auth.digest.Mac(AK, 'other');
    expectKodo(() => verifyManagement(req('GET', url, qiniu.util.generateAccessToken(wrongKey, url)), secretOf, now), 'badToken', 401);
  });

  it('rejects a stale or unparsable X-Qiniu-Date with 403, only after the signature verified', () => {
    const url = 'http://rs.example.com/stat/YmtOOmtleQ==';
    const sign = (d: string): SignedRequest =>
      req('GET', url, qiniu.util.generateAccessTokenV2(mac, url, 'GET', FORM, undefined, { 'X-Qiniu-Date': d }), {
        headers: { 'content-type': FORM, 'x-qiniu-date': d },
      });
    expectKodo(() => verifyManagement(sign('19700101T000000Z'), secretOf, now), 'staleDate', 403);
    expectKodo(() => verifyManagement(sign('20241301T000000Z'), secretOf, now), 'staleDate', 403);
    expectKodo(() => verifyManagement(sign('garbage'), secretOf, now), 'staleDate', 403);
    expect(verifyManagement(sign('20240101T001400Z'), secretOf, JAN_2024).scheme).toBe('Qiniu');
    expectKodo(() => verifyManagement(sign('20240101T001600Z'), secretOf, JAN_2024), 'staleDate', 403);
    expect(verifyManagement(sign('20240101T001600Z'), secretOf, JAN_2024, { dateWindowSeconds: 1000 }).scheme).toBe('Qiniu');
    const forged = sign('19700101T000000Z');
    forged.headers.authorization = 'Qiniu ak:AAAAAAAAAAAAAAAAAAAAAAAAAAA=';
    expectKodo(() => verifyManagement(forged, secretOf, now), 'badToken', 401);
  });
});

describe('verifyUploadToken', () => {
  it('verifies PutPolicy.uploadToken and decodes the policy', () => {
    const token = new qiniu.rs.PutPolicy({ scope: 'b:k', returnBody: '{"key":"$(key)"}', expires: 7200 }).uploadToken(mac);
    const t = verifyUploadToken(token, secretOf);
    expect(t.accessKey).toBe(AK);
    expect(t.policy.scope).toBe('b:k');
    expect(t.policy.returnBody).toBe('{"key":"$(key)"}');
    expect(typeof t.policy.deadline).toBe('number');
    expect(token.endsWith(`:${t.encodedPolicy}`)).toBe(true);
  });

  it('does not check the deadline', () => {
    const encoded = urlsafeB64Encode('{"scope":"b","deadline":1}');
    expect(verifyUploadToken(`ak:${hmacSign(SK, encoded)}:${encoded}`, secretOf).policy.deadline).toBe(1);
  });

  it('rejects missing, malformed, unknown and tampered tokens', () => {
    const token = new qiniu.rs.PutPolicy({ scope: 'b' }).uploadToken(mac);
    const [ak, sign, policy] = token.split(':') as [string, string, string];
    expectKodo(() => verifyUploadToken(undefined, secretOf), 'tokenMissing', 401);
    expectKodo(() => verifyUploadToken('  ', secretOf), 'tokenMissing', 401);
    for (const bad of ['garbage', 'ak:sig', ':s:p', 'ak:s:', `${ak}:${policy}`, `${ak}:x${sign}:${policy}`]) {
      expectKodo(() => verifyUploadToken(bad, secretOf), 'badToken', 401);
    }
    expectKodo(() => verifyUploadToken(`zz:${sign}:${policy}`, secretOf), 'badToken', 401);
    const other = urlsafeB64Encode('{"scope":"other"}');
    expectKodo(() => verifyUploadToken(`${ak}:${sign}:${other}`, secretOf), 'badToken', 401);
    for (const text of ['[1]', 'null', '"s"', '{bad json', '\xff']) {
      const enc = text === '\xff' ? urlsafeB64Encode(Buffer.from([0xff])) : urlsafeB64Encode(text);
      expectKodo(() => verifyUploadToken(`ak:${hmacSign(SK, enc)}:${enc}`, secretOf), 'badToken', 401);
    }
    const notB64 = 'not*base64';
    expectKodo(() => verifyUploadToken(`ak:${hmacSign(SK, notB64)}:${notB64}`, secretOf), 'badToken', 401);
  });

  it('a token that verified is kept: the same frozen result while its key and secret stay, refused once they change', () => {
    const token = new qiniu.rs.PutPolicy({ scope: 'cached', returnBody: '{"k":"$(key)"}' }).uploadToken(mac);
    const first = verifyUploadToken(token, secretOf);
    expect(verifyUploadToken(token, secretOf)).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.policy)).toBe(true);
    // A rotated secret: the kept result is not used, the signature is checked again and fails.
    expectKodo(() => verifyUploadToken(token, (ak) => (ak === AK ? 'rotated' : undefined)), 'badToken', 401);
    // A removed key.
    expectKodo(() => verifyUploadToken(token, () => undefined), 'badToken', 401);
    // A tampered copy (another signature, same policy) is not the kept text.
    const [ak, sign, policy] = token.split(':') as [string, string, string];
    const tampered = `${ak}:${sign.slice(0, 5)}${sign[5] === 'A' ? 'B' : 'A'}${sign.slice(6)}:${policy}`;
    expectKodo(() => verifyUploadToken(tampered, secretOf), 'badToken', 401);
    expect(verifyUploadToken(token, secretOf)).toBe(first);
  });

  it('extracts UpToken from Authorization', () => {
    expect(upTokenFromAuthorization('UpToken a:b:c')).toBe('a:b:c');
    expect(upTokenFromAuthorization('uptoken  a:b:c ')).toBe('a:b:c');
    expect(upTokenFromAuthorization('QBox a:b')).toBeUndefined();
    expect(upTokenFromAuthorization(undefined)).toBeUndefined();
    expect(upTokenFromAuthorization('UpToken')).toBeUndefined();
  });
});

describe('verifyPrivateDownload', () => {
  const bm = new qiniu.rs.BucketManager(mac);
  const now = 1_700_000_000;
  const target = (url: string): string => {
    const u = new URL(url);
    return u.pathname + u.search;
  };

  it('verifies SDK URLs with fops, ports, https and forwarded headers', () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['http://127.0.0.1:9000', { host: '127.0.0.1:9000' }],
      ['https://dl.example.com', { host: 'dl.example.com' }],
      ['http://public.example.com', { host: '10.0.0.1:9000', 'x-forwarded-host': 'public.example.com, proxy' }],
    ];
    for (const [domain, headers] of cases) {
      const url = bm.privateDownloadUrl(domain, 'dir/ä b+c.jpg?imageView2/1/w/200|saveas/Yjpr', now + 10);
      expect(verifyPrivateDownload({ rawUrl: target(url), headers }, secretOf, now)).toEqual({ accessKey: AK });
    }
  });

  it('rejects expired, tampered, malformed, misplaced and unknown tokens', () => {
    const url = bm.privateDownloadUrl('http://dl.example.com', 'a.jpg', now);
    const headers = { host: 'dl.example.com' };
    const check = (rawUrl: string, at = now): unknown => verifyPrivateDownload({ rawUrl, headers }, secretOf, at);
    const raw = target(url);
    expect(check(raw)).toEqual({ accessKey: AK });
    expectKodo(() => check(raw, now + 1), 'downloadTokenExpired', 401);
    expectKodo(() => check(raw.replace('a.jpg', 'b.jpg')), 'badDownloadToken', 401);
    expectKodo(() => check(raw.replace(`e=${now}`, `e=${now + 999}`)), 'badDownloadToken', 401);
    expectKodo(() => check('/a.jpg'), 'badDownloadToken', 401);
    expectKodo(() => check('/a.jpg?e=1'), 'badDownloadToken', 401);
    expectKodo(() => check(`${raw}&x=1`), 'badDownloadToken', 401);
    expectKodo(() => check(raw.replace('token=ak:', 'token=ak')), 'badDownloadToken', 401);
    expectKodo(() => check(raw.replace('token=ak:', 'token=zz:')), 'badDownloadToken', 401);
    expectKodo(() => check(raw.replace('&token=', '&token=&token=')), 'badDownloadToken', 401);
    expectKodo(() => verifyPrivateDownload({ rawUrl: raw, headers: { host: 'evil.example.com' } }, secretOf, now), 'badDownloadToken', 401);
    // signed but without `e`: treated as expired
    const noE = `http://dl.example.com/a.jpg?x=1`;
    const rawNoE = `/a.jpg?x=1&token=ak:${hmacSign(SK, noE)}`;
    expectKodo(() => check(rawNoE), 'downloadTokenExpired', 401);
  });
});

describe('signCallback', () => {
  const url = 'http://app.example.com:8080/cb/path?x=1&y=%20';

  it('is accepted by qiniu.util.isQiniuCallback for form and JSON bodies', () => {
    const form = 'key=k&hash=h&x%3Afoo=bar';
    const formAuth = signCallback(AK, SK, url, form, FORM);
    expect(formAuth.startsWith('QBox ak:')).toBe(true);
    expect(qiniu.util.isQiniuCallback(mac, url, form, formAuth)).toBe(true);
    expect(qiniu.util.isQiniuCallback(mac, url, form + 'x', formAuth)).toBe(false);
    const json = '{"key":"k","name":"é"}';
    const jsonAuth = signCallback(AK, SK, url, Buffer.from(json), 'application/json; charset=utf-8');
    expect(qiniu.util.isQiniuCallback(mac, url, json, jsonAuth)).toBe(true);
  });

  it('omits the body for other content types', () => {
    const auth = signCallback(AK, SK, url, 'ignored', 'text/plain');
    expect(qiniu.util.isQiniuCallback(mac, url, '', auth)).toBe(true);
  });
});

describe('real SDK requests on the wire', () => {
  interface Captured {
    method: string;
    url: string;
    headers: IncomingHttpHeaders;
    body: Buffer;
  }

  /** Runs `fn` against a capture server on a random non-default port; returns every request it saw. */
  async function capture(fn: (host: string) => Promise<unknown>): Promise<Captured[]> {
    const seen: Captured[] = [];
    const server = createServer((rq, rs) => {
      const chunks: Buffer[] = [];
      rq.on('data', (c: Buffer) => chunks.push(c));
      rq.on('end', () => {
        seen.push({ method: rq.method ?? '', url: rq.url ?? '', headers: rq.headers, body: Buffer.concat(chunks) });
        rs.writeHead(200, { 'content-type': 'application/json' });
        rs.end(rq.url?.startsWith('/batch') ? '[]' : '{"hash":"h","fsize":1,"mimeType":"a/b","putTime":1,"type":0}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await fn(host);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    return seen;
  }

  it('verifies BucketManager stat/batch (doubled-port Host, X-Qiniu-Date, form body) and a private GET', async () => {
    const seen = await capture(async (host) => {
      const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
      const bm = new qiniu.rs.BucketManager(mac, new qiniu.conf.Config({ zone, useHttpsDomain: false }));
      await bm.stat('bk', 'dir/a b');
      await bm.batch([qiniu.rs.statOp('bk', 'k1'), qiniu.rs.statOp('bk', 'k2')]);
      const url = bm.privateDownloadUrl(`http://${host}`, 'a b.jpg?imageInfo', Math.floor(Date.now() / 1000) + 60);
      await new Promise<void>((resolve, reject) => {
        httpRequest(url, (rs) => rs.resume().on('end', resolve)).on('error', reject).end();
      });
    });
    expect(seen).toHaveLength(3);
    const [stat, batch, download] = seen as [Captured, Captured, Captured];
    for (const c of [stat, batch]) {
      expect(c.headers['x-qiniu-date']).toBeDefined();
      expect(c.headers.authorization).toMatch(/^Qiniu ak:/);
      const r = { method: c.method, rawUrl: c.url, headers: c.headers, body: c.body };
      expect(verifyManagement(r, secretOf, Date.now())).toEqual({ accessKey: AK, scheme: 'Qiniu' });
      expectKodo(() => verifyManagement(r, secretOf, Date.now() + 3_600_000), 'staleDate', 403);
    }
    expect(batch.body.length).toBeGreaterThan(0);
    const tamperedBody = { method: batch.method, rawUrl: batch.url, headers: batch.headers, body: Buffer.from('op=x') };
    expectKodo(() => verifyManagement(tamperedBody, secretOf, Date.now()), 'badToken', 401);
    const now = Math.floor(Date.now() / 1000);
    expect(verifyPrivateDownload({ rawUrl: download.url, headers: download.headers }, secretOf, now)).toEqual({
      accessKey: AK,
    });
  });
});
