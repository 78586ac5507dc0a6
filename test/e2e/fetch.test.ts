/**
 * Sync fetch (docs/development/kodo-protocol.md §8.5): `POST /fetch/<EncodedURL>/to/<EncodedEntryURI>[/host/<b64>]` stores a resource
 * from a URL, through the outbound guard. Origins are local node:http servers on loopback addresses that count
 * their connections; every Granary here has the `beforeConnect` test seam installed, refusing any connection
 * outside loopback (the no-allow-list server refuses every connection), so no test can reach another machine.
 * Made-up host names resolve through the `resolve` seam, never through DNS.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboundConnectTarget, ResolvedAddress } from '../../src/outbound/client.js';
import { qetag, qetagOfFile } from '../helpers/etag.js';
import { serveBytes, startOrigin, watchConnects, type Origin } from '../helpers/fetch-origin.js';
import { b64, put, rawOp, type OpAnswer } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectError, expectStored, FIXTURE_IMAGES, stagingFiles } from '../helpers/upload.js';

const BUCKET = 'fetched';
const VIDEO = '/work/shared/fixtures/video/big_buck_bunny.mp4';
const PHOTO = join(FIXTURE_IMAGES, 'exif-org_canon-ixus.jpg');
const PHOTO2 = join(FIXTURE_IMAGES, 'gps_DSCN0010.jpg');

/** Where `target` (`bucket` or `bucket:key`) and the options put a fetch of `url`; EncodedURL padded unless told. */
function fetchPath(url: string, target: string, opts: { host?: string; unpadded?: boolean } = {}): string {
  const encodedUrl = opts.unpadded ? b64(url).replace(/=+$/, '') : b64(url);
  return `/fetch/${encodedUrl}/to/${b64(target)}${opts.host !== undefined ? `/host/${b64(opts.host)}` : ''}`;
}

/** A signed (QBox, as the SDK signs io requests) `POST /fetch/…`. */
function fetchOp(s: TestServer, url: string, target: string, opts: { host?: string; unpadded?: boolean; mac?: qiniu.auth.digest.Mac } = {}): Promise<OpAnswer> {
  return rawOp(s, fetchPath(url, target, opts), { scheme: 'QBox', ...(opts.mac ? { mac: opts.mac } : {}) });
}

interface FetchResult {
  fsize: number;
  hash: string;
  key: string;
  mimeType: string;
}

/** Asserts a successful fetch answer: 200, `Cache-Control: no-store`, JSON with exactly the four fields. */
function expectFetched(a: OpAnswer, expected: FetchResult): void {
  expect(a.status, a.text).toBe(200);
  expect(a.headers.get('cache-control')).toBe('no-store');
  expect(a.headers.get('content-type')).toMatch(/^application\/json/);
  expect(a.json).toEqual(expected);
}

/** Runs `fn` with the `resolve` seam answering `table` (other names: ENOTFOUND), then removes it. */
async function withResolver<T>(s: TestServer, table: Record<string, ResolvedAddress[]>, fn: () => Promise<T>): Promise<T> {
  s.running.g.outbound.resolve = async (hostname) => {
    const answer = table[hostname];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return answer;
  };
  try {
    return await fn();
  } finally {
    delete s.running.g.outbound.resolve;
  }
}

const family = (address: string): number => (address.includes(':') ? 6 : 4);

/** Addresses outside 127.0.0.0/8 and ::1 that a made-up host name may resolve to; each must be refused. */
const PRIVATE_ANSWERS = [
  '10.0.0.5',
  '10.255.255.254',
  '172.16.0.1',
  '172.31.255.254',
  '192.168.1.10',
  '169.254.169.254',
  '169.254.10.1',
  '100.64.0.1',
  '100.100.100.200',
  '0.0.0.0',
  '224.0.0.251',
  'fc00::1',
  'fd12:3456::1',
  'fe80::1',
  'fd00:ec2::254',
  '::',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '64:ff9b::a00:1',
  '2002:c0a8:101::1',
  '127.0.0.1',
  '::1',
];

describe('fetch from an allowed origin (GRANARY_OUTBOUND_ALLOW=127.0.0.1/32)', () => {
  let s: TestServer;
  let origin: Origin;
  let connects: OutboundConnectTarget[];

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
    connects = watchConnects(s, 'non-loopback');
    await createBucket(s, BUCKET);
    origin = await startOrigin('127.0.0.1');
  });
  afterAll(async () => {
    await origin?.close();
    await s?.stop();
  });

  it('stores a real photo through the SDK (bm.fetch): hash = qetag, byte-identical download, MIME from the origin', async () => {
    const photo = await readFile(PHOTO);
    origin.route('/photos/canon.jpg', serveBytes(photo, 'image/jpeg'));
    const r = await sdk<FetchResult>(s.bucketManager().fetch(`${origin.base}/photos/canon.jpg`, BUCKET, 'photos/canon.jpg'));
    expect(r).toEqual({
      status: 200,
      data: { fsize: photo.length, hash: qetag(photo), key: 'photos/canon.jpg', mimeType: 'image/jpeg' },
    });
    const d = await expectStored(s, BUCKET, 'photos/canon.jpg', photo);
    expect(d.headers.get('content-type')).toBe('image/jpeg');
    const stat = await sdk<{ fsize: number; hash: string; mimeType: string }>(s.bucketManager().stat(BUCKET, 'photos/canon.jpg'));
    expect(stat.data).toMatchObject({ fsize: photo.length, hash: qetag(photo), mimeType: 'image/jpeg' });
    expect(origin.requests.at(-1)).toMatchObject({ method: 'GET', url: '/photos/canon.jpg' });
  });

  it('stores the 3.9 MB video: hash = qetag of the file, download byte-identical, mimeType video/mp4', async () => {
    const video = await readFile(VIDEO);
    origin.route('/media/bunny.mp4', serveBytes(video, 'video/mp4'));
    const a = await fetchOp(s, `${origin.base}/media/bunny.mp4`, `${BUCKET}:bunny.mp4`);
    expectFetched(a, { fsize: video.length, hash: await qetagOfFile(VIDEO), key: 'bunny.mp4', mimeType: 'video/mp4' });
    const d = await expectStored(s, BUCKET, 'bunny.mp4', video);
    expect(d.headers.get('content-type')).toBe('video/mp4');
    expect(d.headers.get('etag')).toContain(qetag(video));
  });

  it('takes mimeType from the origin Content-Type (parameters dropped), not from the content', async () => {
    const text = Buffer.from('{"made":"up"}');
    origin.route('/custom', serveBytes(text, 'application/x-granary-test; charset=utf-8'));
    const a = await fetchOp(s, `${origin.base}/custom`, `${BUCKET}:custom`);
    expectFetched(a, { fsize: text.length, hash: qetag(text), key: 'custom', mimeType: 'application/x-granary-test' });
  });

  it('sniffs the MIME type when the origin sends no Content-Type', async () => {
    const photo = await readFile(PHOTO2);
    origin.route('/untyped', serveBytes(photo));
    const a = await fetchOp(s, `${origin.base}/untyped`, `${BUCKET}:untyped`);
    expectFetched(a, { fsize: photo.length, hash: qetag(photo), key: 'untyped', mimeType: 'image/jpeg' });
  });

  it('treats an origin application/octet-stream as unspecified (like an upload): the type is sniffed', async () => {
    const photo = await readFile(PHOTO2);
    origin.route('/generic', serveBytes(photo, 'application/octet-stream'));
    const a = await fetchOp(s, `${origin.base}/generic`, `${BUCKET}:generic`);
    expectFetched(a, { fsize: photo.length, hash: qetag(photo), key: 'generic', mimeType: 'image/jpeg' });
  });

  it('bucket-only entry: the key is the hash; fetching the same content again succeeds', async () => {
    const photo = await readFile(PHOTO2);
    origin.route('/by-hash.jpg', serveBytes(photo, 'image/jpeg'));
    const expected = { fsize: photo.length, hash: qetag(photo), key: qetag(photo), mimeType: 'image/jpeg' };
    const r = await sdk<FetchResult>(s.bucketManager().fetch(`${origin.base}/by-hash.jpg`, BUCKET, undefined as unknown as string));
    expect(r).toEqual({ status: 200, data: expected });
    await expectStored(s, BUCKET, qetag(photo), photo);
    expectFetched(await fetchOp(s, `${origin.base}/by-hash.jpg`, BUCKET), expected);
  });

  it('overwrites an existing key: the new content wins', async () => {
    await put(s, BUCKET, 'replace-me', 'old content', { mimeType: 'text/plain' });
    const fresh = Buffer.from('new content from the origin');
    origin.route('/fresh', serveBytes(fresh, 'text/markdown'));
    const a = await fetchOp(s, `${origin.base}/fresh`, `${BUCKET}:replace-me`);
    expectFetched(a, { fsize: fresh.length, hash: qetag(fresh), key: 'replace-me', mimeType: 'text/markdown' });
    await expectStored(s, BUCKET, 'replace-me', fresh);
  });

  it('accepts the EncodedURL and the entry padded and unpadded', async () => {
    const body = Buffer.from('padding matters');
    // A path whose URL makes base64 padding: the length is not a multiple of 3.
    let path = '/pad';
    while (`${origin.base}${path}`.length % 3 === 0) path += 'x';
    origin.route(path, serveBytes(body, 'text/plain'));
    const url = `${origin.base}${path}`;
    expect(b64(url)).toMatch(/=$/);
    expect(b64(`${BUCKET}:pad`)).toMatch(/=$/);
    const expected = { fsize: body.length, hash: qetag(body), key: 'pad', mimeType: 'text/plain' };
    expectFetched(await fetchOp(s, url, `${BUCKET}:pad`), expected);
    expectFetched(await fetchOp(s, url, `${BUCKET}:pad`, { unpadded: true }), expected);
    const bothUnpadded = `/fetch/${b64(url).replace(/=+$/, '')}/to/${b64(`${BUCKET}:pad`).replace(/=+$/, '')}`;
    expectFetched(await rawOp(s, bothUnpadded, { scheme: 'QBox' }), expected);
    // The Qiniu (v2) signature is accepted too.
    expectFetched(await rawOp(s, bothUnpadded), expected);
  });

  it('/host/<b64> sends that Host header to the origin (the URL host otherwise)', async () => {
    const body = Buffer.from('virtual host');
    origin.route('/vhost', serveBytes(body, 'text/plain'));
    expectFetched(await fetchOp(s, `${origin.base}/vhost`, `${BUCKET}:vhost`, { host: 'cdn.example.com' }), {
      fsize: body.length,
      hash: qetag(body),
      key: 'vhost',
      mimeType: 'text/plain',
    });
    expect(origin.requests.at(-1)?.headers.host).toBe('cdn.example.com');
    expect((await fetchOp(s, `${origin.base}/vhost`, `${BUCKET}:vhost`)).status).toBe(200);
    expect(origin.requests.at(-1)?.headers.host).toBe(`127.0.0.1:${origin.port}`);
  });

  it('follows a redirect within the allowed origin', async () => {
    const body = Buffer.from('moved here');
    origin.route('/old-place', (_req, res) => res.writeHead(302, { Location: '/new-place.txt' }).end());
    origin.route('/new-place.txt', serveBytes(body, 'text/plain'));
    const a = await fetchOp(s, `${origin.base}/old-place`, `${BUCKET}:moved`);
    expectFetched(a, { fsize: body.length, hash: qetag(body), key: 'moved', mimeType: 'text/plain' });
    expect(origin.requests.slice(-2).map((r) => r.url)).toEqual(['/old-place', '/new-place.txt']);
  });

  it('origin 404 → 404, nothing stored', async () => {
    const a = await fetchOp(s, `${origin.base}/missing`, `${BUCKET}:missing`);
    expectError(a, 404, /404/);
    expect((await download(s, BUCKET, 'missing')).status).toBe(404);
  });

  it('origin 500 → 478 naming 500; the old object stays', async () => {
    await put(s, BUCKET, 'keep-on-500', 'kept');
    origin.route('/boom', (_req, res) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('internal error'));
    const a = await fetchOp(s, `${origin.base}/boom`, `${BUCKET}:keep-on-500`);
    expectError(a, 478, /\b500\b/);
    await expectStored(s, BUCKET, 'keep-on-500', Buffer.from('kept'));
  });

  it('an unreachable origin (nothing listens) → 478', async () => {
    const gone = await startOrigin('127.0.0.1');
    await gone.close();
    const a = await fetchOp(s, `${gone.base}/x`, `${BUCKET}:unreachable`);
    expectError(a, 478, /ECONNREFUSED/);
  });

  it('refuses a redirect from the allowed origin to a loopback address the list does not cover; that server sees no connection', async () => {
    const second = await startOrigin('127.0.0.2');
    const v6 = await startOrigin('::1').catch(() => undefined);
    try {
      second.route('/target', serveBytes(Buffer.from('must not be fetched')));
      v6?.route('/target', serveBytes(Buffer.from('must not be fetched')));
      origin.route('/to-127-0-0-2', (_req, res) => res.writeHead(302, { Location: `${second.base}/target` }).end());
      origin.route('/to-v6', (_req, res) => res.writeHead(301, { Location: `http://[::1]:${v6?.port ?? 9}/target` }).end());
      const before = connects.length;
      for (const path of ['/to-127-0-0-2', '/to-v6']) {
        const a = await fetchOp(s, `${origin.base}${path}`, `${BUCKET}:redirected`);
        expectError(a, 403, /GRANARY_OUTBOUND_ALLOW/);
      }
      expect(second.connections()).toBe(0);
      expect(v6?.connections() ?? 0).toBe(0);
      // The connect step ran for the first hops only (127.0.0.1), never for a redirect target.
      expect(connects.slice(before).map((c) => c.addresses)).toEqual([['127.0.0.1'], ['127.0.0.1']]);
      expect((await download(s, BUCKET, 'redirected')).status).toBe(404);
    } finally {
      await second.close();
      await v6?.close();
    }
  });

  it('refuses a redirect to a private address, by literal or by a name resolving to one, before connecting', async () => {
    origin.route('/to-metadata', (_req, res) => res.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/' }).end());
    origin.route('/to-intranet', (_req, res) => res.writeHead(307, { Location: 'http://[fd00::1]:8080/' }).end());
    origin.route('/to-mapped', (_req, res) => res.writeHead(302, { Location: 'http://[::ffff:10.0.0.1]/' }).end());
    origin.route('/to-name', (_req, res) => res.writeHead(302, { Location: 'http://internal.example.test:8080/secret' }).end());
    const before = connects.length;
    await withResolver(s, { 'internal.example.test': [{ address: '10.0.0.5', family: 4 }] }, async () => {
      for (const path of ['/to-metadata', '/to-intranet', '/to-mapped', '/to-name']) {
        const a = await fetchOp(s, `${origin.base}${path}`, `${BUCKET}:private`);
        expectError(a, 403, /GRANARY_OUTBOUND_ALLOW/);
      }
    });
    expect(connects.slice(before).flatMap((c) => c.addresses)).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('401 without credentials or with a bad signature; the origin is not contacted', async () => {
    origin.route('/secret-free', serveBytes(Buffer.from('x')));
    const seen = origin.requests.length;
    const path = fetchPath(`${origin.base}/secret-free`, `${BUCKET}:nope`);
    const bare = await fetch(`${s.url}${path}`, { method: 'POST' });
    expect(bare.status).toBe(401);
    const forged = await fetch(`${s.url}${path}`, { method: 'POST', headers: { Authorization: `QBox ${s.mac.accessKey}:AAAAAAAAAAAAAAAAAAAAAAAAAAA=` } });
    expect(forged.status).toBe(401);
    expect(origin.requests.length).toBe(seen);
  });

  it('an account key fetching into another account bucket → 403; into its own bucket → 200', async () => {
    const pair = await s.running.g.keyIndex.create(0);
    const alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
    const body = Buffer.from('alice data');
    origin.route('/alice', serveBytes(body, 'text/plain'));
    const seen = origin.requests.length;
    const refused = await fetchOp(s, `${origin.base}/alice`, `${BUCKET}:from-alice`, { mac: alice });
    expectError(refused, 403, /permission/);
    expect(origin.requests.length).toBe(seen);
    expect((await download(s, BUCKET, 'from-alice')).status).toBe(404);
    const own = await sdk(new qiniu.rs.BucketManager(alice, s.zoneConfig()).createBucket('alice-fetch', { regionId: 'z0' }));
    expect(own.status).toBe(200);
    expectFetched(await fetchOp(s, `${origin.base}/alice`, 'alice-fetch:mine', { mac: alice }), {
      fsize: body.length,
      hash: qetag(body),
      key: 'mine',
      mimeType: 'text/plain',
    });
  });

  it('a bucket that does not exist → 631, the origin is not contacted', async () => {
    origin.route('/nobucket', serveBytes(Buffer.from('x')));
    const seen = origin.requests.length;
    expectError(await fetchOp(s, `${origin.base}/nobucket`, 'no-such-bucket:k'), 631);
    expect(origin.requests.length).toBe(seen);
  });

  describe('bad input → 400 with a clear message, nothing contacted', () => {
    const url = (): string => `${origin?.base ?? 'http://127.0.0.1:1'}/never`;
    const cases: Array<[string, () => string, RegExp]> = [
      ['EncodedURL not base64', () => `/fetch/not*base64!/to/${b64(BUCKET)}`, /EncodedURL is not URL-safe base64/],
      ['EncodedURL decoding to text that is not a URL', () => fetchPath('not a url', BUCKET), /invalid source URL: "not a url" is not a URL/],
      ['a relative URL', () => fetchPath('/etc/passwd', BUCKET), /is not a URL/],
      ['file:///etc/passwd', () => fetchPath('file:///etc/passwd', BUCKET), /file: URLs are not fetched/],
      ['ftp://', () => fetchPath('ftp://127.0.0.1/pub/x', BUCKET), /ftp: URLs are not fetched/],
      ['gopher://', () => fetchPath('gopher://127.0.0.1:70/_GET', BUCKET), /gopher: URLs are not fetched/],
      ['data:', () => fetchPath('data:text/plain,hello', BUCKET), /data: URLs are not fetched/],
      ['an entry with no bucket (":")', () => `/fetch/${b64(url())}/to/Og==`, /no bucket/],
      ['an entry with no bucket (":key")', () => fetchPath(url(), ':key'), /no bucket/],
      ['an empty entry', () => `/fetch/${b64(url())}/to/`, /no bucket/],
      ['an entry not base64', () => `/fetch/${b64(url())}/to/no*entry`, /EncodedEntryURI is not URL-safe base64/],
      ['no /to/ part', () => `/fetch/${b64(url())}`, /\/to\//],
      ['an unknown parameter', () => `${fetchPath(url(), BUCKET)}/color/${b64('red')}`, /unknown fetch parameter color/],
    ];
    it.each(cases)('%s', async (_name, path, message) => {
      const seen = origin.requests.length;
      const before = connects.length;
      expectError(await rawOp(s, path(), { scheme: 'QBox' }), 400, message);
      expect(origin.requests.length).toBe(seen);
      expect(connects.length).toBe(before);
    });
  });
});

describe('fetch limits (GRANARY_FETCH_TIMEOUT=1, GRANARY_FETCH_MAX_SIZE=1000)', () => {
  let s: TestServer;
  let origin: Origin;

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32', GRANARY_FETCH_TIMEOUT: '1', GRANARY_FETCH_MAX_SIZE: '1000' });
    watchConnects(s, 'non-loopback');
    await createBucket(s, BUCKET);
    origin = await startOrigin('127.0.0.1');
  });
  afterAll(async () => {
    await origin?.close();
    await s?.stop();
  });

  it('an origin that never answers headers → 504 after GRANARY_FETCH_TIMEOUT; the old object stays', async () => {
    await put(s, BUCKET, 'slow', 'old slow');
    let closed!: Promise<void>;
    origin.route('/hang', (req) => {
      closed = new Promise((resolve) => req.socket.once('close', () => resolve()));
    });
    const started = Date.now();
    const a = await fetchOp(s, `${origin.base}/hang`, `${BUCKET}:slow`);
    expectError(a, 504, /timed out/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await closed; // Granary dropped the connection it gave up on.
    await expectStored(s, BUCKET, 'slow', Buffer.from('old slow'));
  });

  it('an origin whose body stalls → 504; the old object stays, nothing left in staging', async () => {
    await put(s, BUCKET, 'stall', 'old stall');
    origin.route('/stall', (_req, res) => {
      res.writeHead(200, { 'Content-Length': '800' });
      res.write(Buffer.alloc(300, 1));
    });
    const a = await fetchOp(s, `${origin.base}/stall`, `${BUCKET}:stall`);
    expectError(a, 504, /stalled/);
    await expectStored(s, BUCKET, 'stall', Buffer.from('old stall'));
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('a body over GRANARY_FETCH_MAX_SIZE → 413 (declared or streamed); the old object is intact byte for byte', async () => {
    const old = await readFile(join(FIXTURE_IMAGES, 'Sony_HDR-HC3.jpg'));
    await put(s, BUCKET, 'guarded', old, { mimeType: 'image/jpeg' });
    const big = Buffer.alloc(1001, 7);
    origin.route('/declared', serveBytes(big, 'application/octet-stream'));
    origin.route('/chunked', (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.write(big.subarray(0, 600));
      res.end(big.subarray(600));
    });
    for (const path of ['/declared', '/chunked']) {
      const a = await fetchOp(s, `${origin.base}${path}`, `${BUCKET}:guarded`);
      expectError(a, 413, /1000 bytes/);
      expect((a.json as { error: string }).error).toMatch(/GRANARY_FETCH_MAX_SIZE/);
      const d = await expectStored(s, BUCKET, 'guarded', old);
      expect(d.headers.get('content-type')).toBe('image/jpeg');
    }
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('a body of exactly GRANARY_FETCH_MAX_SIZE bytes is stored', async () => {
    const exact = Buffer.alloc(1000, 9);
    origin.route('/exact', serveBytes(exact, 'application/x-exact'));
    const a = await fetchOp(s, `${origin.base}/exact`, `${BUCKET}:exact`);
    expectFetched(a, { fsize: 1000, hash: qetag(exact), key: 'exact', mimeType: 'application/x-exact' });
  });
});

describe('the outbound guard without an allow-list', () => {
  let s: TestServer;
  let v4: Origin;
  let v6: Origin | undefined;
  let connects: OutboundConnectTarget[];
  const connections = (): number => v4.connections() + (v6?.connections() ?? 0);

  beforeAll(async () => {
    s = await startTestServer();
    // This server must never connect anywhere: every connect step is vetoed (and recorded).
    connects = watchConnects(s, 'all');
    await createBucket(s, BUCKET);
    v4 = await startOrigin('127.0.0.1');
    v6 = await startOrigin('::1').catch(() => undefined);
    for (const o of [v4, v6]) o?.route('/x', serveBytes(Buffer.from('loopback secret')));
  });
  afterAll(async () => {
    await v4?.close();
    await v6?.close();
    await s?.stop();
  });

  const loopbackUrls = (): string[] => [
    `http://127.0.0.1:${v4.port}/x`,
    `http://localhost:${v4.port}/x`,
    `http://[::1]:${v6?.port ?? v4.port}/x`,
    `http://[::ffff:127.0.0.1]:${v4.port}/x`,
    `http://[::ffff:7f00:1]:${v4.port}/x`,
    `http://127.1:${v4.port}/x`,
    `http://2130706433:${v4.port}/x`,
    `http://0x7f.0.0.1:${v4.port}/x`,
    `http://0.0.0.0:${v4.port}/x`,
    `http://127.0.0.2:${v4.port}/x`,
  ];

  it('refuses every loopback spelling with 403 naming GRANARY_OUTBOUND_ALLOW, and makes no connection', async () => {
    for (const url of loopbackUrls()) {
      const a = await fetchOp(s, url, `${BUCKET}:loop`);
      expectError(a, 403, /GRANARY_OUTBOUND_ALLOW/);
      expect((a.json as { error: string }).error).toMatch(/^refused by the outbound guard: .*is not a public address/);
    }
    expect(connections()).toBe(0);
    expect(connects).toEqual([]);
    expect((await download(s, BUCKET, 'loop')).status).toBe(404);
  });

  it('refuses a made-up host name resolving to any private address, before the connect step', async () => {
    for (const address of PRIVATE_ANSWERS) {
      const a = await withResolver(s, { 'internal.example.test': [{ address, family: family(address) }] }, () =>
        fetchOp(s, 'http://internal.example.test:8080/latest', `${BUCKET}:internal`),
      );
      expectError(a, 403, /GRANARY_OUTBOUND_ALLOW/);
      expect((a.json as { error: string }).error).toContain(`internal.example.test → ${address} [`);
    }
    expect(connects).toEqual([]);
    expect(connections()).toBe(0);
  });

  it('refuses a name whose every answer is private even when there are several', async () => {
    const answers = ['10.0.0.5', 'fd00::5', '127.0.0.1'].map((address) => ({ address, family: family(address) }));
    const a = await withResolver(s, { 'multi.example.test': answers }, () => fetchOp(s, 'http://multi.example.test/x', `${BUCKET}:multi`));
    expectError(a, 403, /10\.0\.0\.5 \[private\], fd00::5 \[unique-local \(private\)\], 127\.0\.0\.1 \[loopback\]/);
    expect(connects).toEqual([]);
  });

  it('the seam sees the connect step: a public answer reaches it (and the test vetoes it), a private one in the same answer does not', async () => {
    const answers = ['10.0.0.5', '203.0.113.7'].map((address) => ({ address, family: family(address) }));
    const a = await withResolver(s, { 'public.example.test': answers }, () => fetchOp(s, 'http://public.example.test:8080/x', `${BUCKET}:public`));
    expectError(a, 478, /test veto/);
    expect(connects.splice(0)).toEqual([{ host: 'public.example.test', port: 8080, addresses: ['203.0.113.7'] }]);
    // An IP literal reaches it the same way.
    const literal = await fetchOp(s, 'http://198.51.100.9/x', `${BUCKET}:public`);
    expectError(literal, 478, /test veto/);
    expect(connects.splice(0)).toEqual([{ host: '198.51.100.9', port: 80, addresses: ['198.51.100.9'] }]);
  });

  it('a resolver failure → 478', async () => {
    const a = await withResolver(s, {}, () => fetchOp(s, 'http://nowhere.example.test/x', `${BUCKET}:nowhere`));
    expectError(a, 478, /ENOTFOUND/);
    expect(connects).toEqual([]);
  });
});

describe('an allow-list naming a host (GRANARY_OUTBOUND_ALLOW=localhost): every redirect hop is checked again', () => {
  let s: TestServer;
  let first: Origin;
  let target: Origin;
  let connects: OutboundConnectTarget[];

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: 'localhost' });
    connects = watchConnects(s, 'non-loopback');
    await createBucket(s, BUCKET);
    first = await startOrigin('127.0.0.1');
    target = await startOrigin('127.0.0.1');
    target.route('/loot', serveBytes(Buffer.from('internal only')));
  });
  afterAll(async () => {
    await first?.close();
    await target?.close();
    await s?.stop();
  });

  it('fetches from localhost (admitted by name)', async () => {
    const body = Buffer.from('by name');
    first.route('/ok', serveBytes(body, 'text/plain'));
    const a = await fetchOp(s, `http://localhost:${first.port}/ok`, `${BUCKET}:by-name`);
    expectFetched(a, { fsize: body.length, hash: qetag(body), key: 'by-name', mimeType: 'text/plain' });
  });

  it('refuses localhost → 127.0.0.1 (not covered by the name); the target sees 0 connections', async () => {
    first.route('/hop', (_req, res) => res.writeHead(302, { Location: `http://127.0.0.1:${target.port}/loot` }).end());
    first.route('/hop6', (_req, res) => res.writeHead(302, { Location: `http://[::1]:${target.port}/loot` }).end());
    const firstConnections = first.connections();
    const before = connects.length;
    for (const path of ['/hop', '/hop6']) {
      const a = await fetchOp(s, `http://localhost:${first.port}${path}`, `${BUCKET}:loot`);
      expectError(a, 403, /GRANARY_OUTBOUND_ALLOW/);
    }
    expect(target.connections()).toBe(0);
    expect(first.connections()).toBe(firstConnections + 2);
    expect(connects.slice(before).map((c) => c.host)).toEqual(['localhost', 'localhost']);
    expect((await download(s, BUCKET, 'loot')).status).toBe(404);
  });
});
