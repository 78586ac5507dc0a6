/**
 * Management, listing, signatures and response headers exactly as Qiniu's Python, PHP, Java and Go SDKs send and
 * read them (prefetch, `cond`, listFilesv2 lines, response headers, 405, Qiniu signatures, chtype 5), plus a walk over
 * representative routes of every role checking X-Reqid and X-Log on every answer and a JSON body on every 2xx JSON
 * answer. The SDK file and function quoted above each test is where the request is built or the answer read.
 */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrigin, serveBytes, type Origin } from '../helpers/fetch-origin.js';
import { rawRequest } from '../helpers/http.js';
import { upToken } from '../helpers/resumable.js';
import { b64, entry, put, rawOp } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, readAnswer, type RawAnswer } from '../helpers/upload.js';

const BUCKET = 'sdk-rs';
const MIRROR = 'sdk-rs-mirror';

/** urlsafe_b64(HMAC-SHA1(SK, data)) — every SDK's `sign`. */
const sign = (data: string): string => createHmac('sha1', SK).update(data).digest('base64url') + '=';

/** `cond` as python-sdk qiniu/services/storage/bucket.py change_status sends it: `k=v` pairs joined by `&`, URL-safe base64. */
const cond = (fields: Record<string, string | number>): string => b64(Object.entries(fields).map(([k, v]) => `${k}=${v}`).join('&'));

/** One raw HTTP exchange with the response header names exactly as sent (node:http `rawHeaders`). */
function rawNames(port: number, method: string, path: string, headers: string[] = []): Promise<{ status: number; names: string[]; raw: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const all = headers.includes('Host') ? headers : ['Host', `127.0.0.1:${port}`, ...headers];
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: all, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, names: res.rawHeaders.filter((_, i) => i % 2 === 0), raw: res.rawHeaders, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('SDK management on the wire', () => {
  let s: TestServer;
  let origin: Origin;
  let port: number;

  beforeAll(async () => {
    origin = await startOrigin();
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
    port = s.running.port;
    await createBucket(s, BUCKET);
    await createBucket(s, MIRROR);
    expect((await sdk(s.bucketManager().image(MIRROR, `${origin.base}/src`))).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
    await origin.close();
  });

  const statOf = async (key: string): Promise<Record<string, unknown>> => {
    const a = await rawOp(s, `/stat/${entry(BUCKET, key)}`, { method: 'GET' });
    expect(a.status, a.text).toBe(200);
    return a.json as Record<string, unknown>;
  };

  describe('cond on every conditioned rs op', () => {
    // python-sdk qiniu/services/storage/bucket.py change_status(bucket, key, status, cond):
    // `/chstatus/<entry>/status/<s>` + `/cond/<urlsafe_b64("hash=…&fsize=…")>`.
    it('python-sdk 7.x BucketManager.change_status with cond: applies when it matches, 608 when not', async () => {
      const { hash } = await put(s, BUCKET, 'st', 'status');
      const bad = await rawOp(s, `/chstatus/${entry(BUCKET, 'st')}/status/1/cond/${cond({ hash: 'Fxxxx' })}`);
      expect(bad.status, bad.text).toBe(608);
      expect((await statOf('st')).status).toBeUndefined();
      const good = await rawOp(s, `/chstatus/${entry(BUCKET, 'st')}/status/1/cond/${cond({ hash, fsize: 6 })}`);
      expect(good.status, good.text).toBe(200);
      expect((await statOf('st')).status).toBe(1);
    });

    it('python-sdk 7.x delete / change_type / delete_after_days with cond: 608 leaves the object as it was', async () => {
      const { hash } = await put(s, BUCKET, 'cd', 'conditioned');
      const wrong = cond({ fsize: 1 });
      for (const path of [
        `/delete/${entry(BUCKET, 'cd')}/cond/${wrong}`,
        `/chtype/${entry(BUCKET, 'cd')}/type/1/cond/${wrong}`,
        `/deleteAfterDays/${entry(BUCKET, 'cd')}/3/cond/${wrong}`,
      ]) {
        const a = await rawOp(s, path);
        expect(a.status, `${path}: ${a.text}`).toBe(608);
      }
      const st = await statOf('cd');
      expect(st).toMatchObject({ hash, type: 0 });
      expect(st.expiration).toBeUndefined();
      expect((await rawOp(s, `/chtype/${entry(BUCKET, 'cd')}/type/1/cond/${cond({ hash })}`)).status).toBe(200);
      expect((await rawOp(s, `/deleteAfterDays/${entry(BUCKET, 'cd')}/3/cond/${cond({ hash, fsize: 11 })}`)).status).toBe(200);
      expect((await rawOp(s, `/delete/${entry(BUCKET, 'cd')}/cond/${cond({ hash, fsize: 11 })}`)).status).toBe(200);
      expect((await rawOp(s, `/stat/${entry(BUCKET, 'cd')}`, { method: 'GET' })).status).toBe(612);
    });

    it('batch ops carry cond too; a bad cond or a stray parameter is a JSON 400', async () => {
      await put(s, BUCKET, 'bc', 'batch');
      const body = `op=${encodeURIComponent(`/chstatus/${entry(BUCKET, 'bc')}/status/1/cond/${cond({ fsize: 2 })}`)}`;
      const a = await rawOp(s, '/batch', { body });
      expect(a.status).toBe(298);
      expect(a.json).toEqual([{ code: 608, data: { error: expect.any(String) } }]);
      expect((await rawOp(s, `/chstatus/${entry(BUCKET, 'bc')}/status/1/cond/${b64('size=1')}`)).status).toBe(400);
      expect((await rawOp(s, `/delete/${entry(BUCKET, 'bc')}/force/true`)).status).toBe(400);
    });
  });

  // go-sdk storage/bucket.go ChangeType / java-sdk BucketManager.changeType(bucket, key, StorageType.INTELLIGENT_TIERING)
  it('go-sdk v7 / java-sdk 7.x changeType to 5 (Intelligent Tiering): stored, stat and list report type 5; 6 is a 400', async () => {
    await put(s, BUCKET, 'it', 'tiering');
    expect((await rawOp(s, `/chtype/${entry(BUCKET, 'it')}/type/5`)).status).toBe(200);
    expect((await statOf('it')).type).toBe(5);
    const list = await rawOp(s, `/list?bucket=${BUCKET}&prefix=it`);
    expect((list.json as { items: Array<{ type: number }> }).items[0]?.type).toBe(5);
    expect((await rawOp(s, `/chtype/${entry(BUCKET, 'it')}/type/6`)).status).toBe(400);
  });

  // php-sdk src/Qiniu/Storage/BucketManager.php prefetch / python-sdk bucket.py prefetch: the answer is the entry.
  it('php-sdk 7.x / python-sdk 7.x BucketManager prefetch: answers {fsize, hash, key, mimeType} like sync fetch', async () => {
    const bytes = Buffer.from('from the origin');
    origin.route('/src/pf.txt', serveBytes(bytes, 'text/plain'));
    const a = await rawOp(s, `/prefetch/${entry(MIRROR, 'pf.txt')}`);
    expect(a.status, a.text).toBe(200);
    expect(a.json).toEqual({ fsize: bytes.length, hash: expect.stringMatching(/^F/), key: 'pf.txt', mimeType: 'text/plain' });
  });

  // php-sdk src/Qiniu/Storage/BucketManager.php listFilesv2: `explode("\n", $ret->body); array_pop($r);` after
  // Http/Response.php, which decodes an application/json answer whole (and fails on lines). java-sdk
  // BucketManager.listFilesV2 splits on "\n" and decodes each line; go-sdk/qshell list_v2.go decodes a stream.
  it('php-sdk 7.x BucketManager::listFilesv2: not application/json, every line one JSON object ending in \\n', async () => {
    await put(s, BUCKET, 'v2l/a', 'a');
    await put(s, BUCKET, 'v2l/d/b', 'b');
    const a = await rawOp(s, `/v2/list?bucket=${BUCKET}&prefix=v2l%2F&delimiter=%2F&limit=1000`);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).not.toMatch(/^application\/json/);
    const lines = a.text.split('\n');
    expect(lines.pop()).toBe(''); // array_pop drops the empty tail
    const parsed = lines.map((l) => JSON.parse(l) as { item: { key: string } | null; dir: string });
    expect(parsed.map((l) => l.item?.key ?? l.dir)).toEqual(['v2l/a', 'v2l/d/']);
  });

  describe('response headers', () => {
    // php-sdk Http/Response.php xReqId()/xLog(): `$this->headers['X-Reqid']`, `['X-Log']`, isJson reads
    // `['Content-Type']`, all by exact name; python-sdk qiniu/http/response.py needs X-Reqid on a 200.
    it('php-sdk 7.x Response: X-Reqid, X-Log, Content-Type and X-Qn-Meta-* go out under canonical names', async () => {
      await put(s, BUCKET, 'hdr', 'headers', { meta: { M1: 'v1' } });
      const dl = await rawNames(port, 'GET', `/${BUCKET}/hdr`);
      expect(dl.status).toBe(200);
      for (const n of ['X-Reqid', 'X-Log', 'Content-Type', 'Content-Length', 'Etag', 'X-Qn-Meta-M1']) expect(dl.names).toContain(n);
      expect(dl.names.filter((n) => n !== n.replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase()))).toEqual([]);
      const err = await rawNames(port, 'GET', `/stat/${entry(BUCKET, 'hdr')}`);
      expect(err.status).toBe(401);
      for (const n of ['X-Reqid', 'X-Log', 'Content-Type', 'Cache-Control']) expect(err.names).toContain(n);
    });

    it('every answer has X-Reqid and X-Log: before any route (a malformed request) and on a router error', async () => {
      const bad = await rawNames(port, 'GET', '/%E0%A4%A');
      expect(bad.status).toBe(400);
      expect(bad.names).toEqual(expect.arrayContaining(['X-Reqid', 'X-Log']));
    });

    it('GET / on the upload host → 405 with Allow: POST (Kodo: method not allowed), JSON error', async () => {
      const a = await rawNames(port, 'GET', '/');
      expect(a.status).toBe(405);
      expect(a.raw[a.raw.indexOf('Allow') + 1]).toBe('POST');
      expect(JSON.parse(a.body)).toEqual({ error: expect.stringMatching(/^method not allowed/) });
      // A person who opened the port in a browser is told what it is and where the console and docs are.
      expect((JSON.parse(a.body) as { error: string }).error).toMatch(/Kodo API port.*web console.*GRANARY_CONSOLE_PORT.*docs/);
      const mk = await rawNames(port, 'GET', '/mkblk/4');
      expect(JSON.parse(mk.body)).toEqual({ error: 'method not allowed: GET /mkblk/4' });
      expect(mk.status).toBe(405);
      expect(mk.raw[mk.raw.indexOf('Allow') + 1]).toBe('POST');
      const v2 = await rawNames(port, 'PUT', `/buckets/${BUCKET}/objects/~/uploads/abc`);
      expect(v2.status).toBe(405);
      expect(v2.raw[v2.raw.indexOf('Allow') + 1]).toBe('DELETE, GET, HEAD, POST');
      // A path no method answers stays a 404.
      expect((await rawNames(port, 'POST', '/no/such/api')).status).toBe(404);
    });
  });

  describe('Qiniu signatures', () => {
    // java-sdk src/main/java/com/qiniu/util/Auth.java signQiniuAuthorization: without a Content-Type header no
    // `Content-Type:` line is signed and no body; BucketManager.listFiles sends GET /list that way.
    it('java-sdk 7.x BucketManager.listFiles: GET /list signed without a Content-Type line', async () => {
      const path = `/list?bucket=${BUCKET}&limit=1`;
      const signed = `GET ${path}\nHost: ${s.host}\n\n`;
      const a = await rawRequest({ port, method: 'GET', path, headers: { Host: s.host, Authorization: `Qiniu ${AK}:${sign(signed)}` } });
      expect(a.status, a.body.toString()).toBe(200);
      expect(JSON.parse(a.body.toString())).toMatchObject({ items: expect.any(Array) });
    });

    it('a signature over a Content-Type the request does not carry is still refused (401)', async () => {
      const path = `/list?bucket=${BUCKET}&limit=1`;
      const signed = `GET ${path}\nHost: ${s.host}\nContent-Type: application/json\n\n`;
      const a = await rawRequest({ port, method: 'GET', path, headers: { Host: s.host, Authorization: `Qiniu ${AK}:${sign(signed)}` } });
      expect(a.status).toBe(401);
    });

    // go-sdk auth/credentials.go collectDataV2: one line per X-Qiniu-* name with `req.Header.Get(name)`, the first
    // value; the Go SDK's auth test sends X-Qiniu-A twice (a, a1).
    it('go-sdk v7 Credentials.SignRequestV2: a repeated X-Qiniu-A header signed with its first value', async () => {
      const path = `/stat/${entry(BUCKET, 'st')}`;
      const data = `GET ${path}\nHost: ${s.host}\nContent-Type: application/x-www-form-urlencoded\nX-Qiniu-A: a\nX-Qiniu-B: b\n\n`;
      const headers = ['Host', s.host, 'Content-Type', 'application/x-www-form-urlencoded', 'X-Qiniu-A', 'a', 'X-Qiniu-A', 'a1', 'X-Qiniu-B', 'b', 'Authorization', `Qiniu ${AK}:${sign(data)}`];
      const a = await rawNames(port, 'GET', path, headers);
      expect(a.status, a.body).toBe(200);
      // A signature over a value that was not sent is refused.
      const forged = `GET ${path}\nHost: ${s.host}\nContent-Type: application/x-www-form-urlencoded\nX-Qiniu-A: zz\nX-Qiniu-B: b\n\n`;
      headers[headers.length - 1] = `Qiniu ${AK}:${sign(forged)}`;
      expect((await rawNames(port, 'GET', path, headers)).status).toBe(401);
    });

    it('node qiniu 7.x generateAccessTokenV2 of the same request (one line per value) is accepted as well', async () => {
      const path = `/stat/${entry(BUCKET, 'st')}`;
      const data = `GET ${path}\nHost: ${s.host}\nContent-Type: application/x-www-form-urlencoded\nX-Qiniu-A: a\nX-Qiniu-A: a1\n\n`;
      const headers = ['Host', s.host, 'Content-Type', 'application/x-www-form-urlencoded', 'X-Qiniu-A', 'a', 'X-Qiniu-A', 'a1', 'Authorization', `Qiniu ${AK}:${sign(data)}`];
      expect((await rawNames(port, 'GET', path, headers)).status).toBe(200);
    });
  });

  /**
   * Representative routes of every role (up, io, rs, rsf, api, uc, downloads): every answer has X-Reqid and X-Log;
   * every 2xx answer labelled application/json has a body that parses as JSON. (rs ops without a result and the uc
   * calls answered by `sendEmpty` are left out: their empty 200 bodies are changed in a parallel branch.)
   */
  it('walk: every answer has X-Reqid and X-Log, every 2xx JSON answer a JSON body (every role)', async () => {
    await put(s, BUCKET, 'walk', 'walk');
    const t = upToken({ scope: BUCKET, deadline: Math.floor(Date.now() / 1000) + 3600 });
    const ut = { authorization: `UpToken ${t}` };
    const calls: Array<[string, () => Promise<RawAnswer>]> = [
      ['up POST /mkblk/3', async () => readAnswer(await fetch(`${s.url}/mkblk/3`, { method: 'POST', headers: { ...ut, 'content-type': 'application/octet-stream' }, body: 'abc' }))],
      ['up POST v2 init', async () => readAnswer(await fetch(`${s.url}/buckets/${BUCKET}/objects/~/uploads`, { method: 'POST', headers: ut }))],
      ['up POST /putb64/-1', async () => readAnswer(await fetch(`${s.url}/putb64/-1/key/${b64('walk-b64')}`, { method: 'POST', headers: ut, body: 'd2Fsaw==' }))],
      ['up GET /', async () => readAnswer(await fetch(`${s.url}/`))],
      ['up POST / (no body)', async () => readAnswer(await fetch(`${s.url}/`, { method: 'POST' }))],
      ['rs GET /stat', () => rawOp(s, `/stat/${entry(BUCKET, 'walk')}`, { method: 'GET' })],
      ['rs POST /stat missing', () => rawOp(s, `/stat/${entry(BUCKET, 'nope')}`)],
      ['rs POST /batch', () => rawOp(s, '/batch', { body: `op=${encodeURIComponent(`/stat/${entry(BUCKET, 'walk')}`)}` })],
      // Result-less operations: 200 with `{}` (what Kodo answers; the SDKs decode every 200 as JSON).
      ['rs POST /chstatus', () => rawOp(s, `/chstatus/${entry(BUCKET, 'walk')}/status/0`)],
      ['rs POST /copy', () => rawOp(s, `/copy/${entry(BUCKET, 'walk')}/${entry(BUCKET, 'walk-copy')}/force/true`)],
      ['rs POST /delete', () => rawOp(s, `/delete/${entry(BUCKET, 'walk-copy')}`)],
      ['uc POST /mkbucketv3', () => rawOp(s, '/mkbucketv3/sdk-rs-walk/region/z0')],
      ['uc POST /drop', () => rawOp(s, '/drop/sdk-rs-walk')],
      ['rsf POST /list', () => rawOp(s, `/list?bucket=${BUCKET}&limit=2`)],
      ['rsf POST /v2/list', () => rawOp(s, `/v2/list?bucket=${BUCKET}&limit=2`)],
      ['io POST /prefetch (no source)', () => rawOp(s, `/prefetch/${entry(BUCKET, 'walk')}`)],
      ['api POST /status/get/prefop', async () => readAnswer(await fetch(`${s.url}/status/get/prefop?id=nope`))],
      ['uc GET /v4/query', async () => readAnswer(await fetch(`${s.url}/v4/query?ak=${AK}&bucket=${BUCKET}`))],
      ['uc POST /buckets', () => rawOp(s, '/buckets')],
      ['uc POST /v2/bucketInfo', () => rawOp(s, `/v2/bucketInfo?bucket=${BUCKET}`)],
      ['download GET', async () => readAnswer(await fetch(`${s.url}/${BUCKET}/walk`))],
      ['download HEAD missing', async () => readAnswer(await fetch(`${s.url}/${BUCKET}/absent`, { method: 'HEAD' }))],
      ['health', async () => readAnswer(await fetch(`${s.url}/health/live`))],
    ];
    for (const [name, call] of calls) {
      const a = await call();
      expect(a.headers.get('x-reqid'), name).toBeTruthy();
      expect(a.headers.get('x-log'), name).toBeTruthy();
      if (/^(rs|uc) POST \/(chstatus|copy|delete|mkbucketv3|drop)$/.test(name)) {
        expect(a.status, `${name}: ${a.text}`).toBe(200);
        expect(a.json, name).toEqual({});
      }
      if (a.status >= 200 && a.status < 300 && /^application\/json/.test(a.headers.get('content-type') ?? '')) {
        expect(a.json, `${name}: ${JSON.stringify(a.text)}`).not.toBeUndefined();
      }
    }
    // The SDK's own calls see the same headers (qiniu 7.x resolves {data, resp}).
    const r = await s.bucketManager().stat(BUCKET, 'walk');
    expect((r.resp.headers as Record<string, string>)['x-log']).toBe('GRANARY');
  });
});
