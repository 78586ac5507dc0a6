/**
 * Bad input on `POST /` over plain HTTP (docs/development/kodo-protocol.md §4.1, §4.2, §14 item 4): every refusal is a JSON
 * `{"error": ...}` with the right status, the object already under the key is untouched, and no staging file is
 * left in `<dataDir>/tmp` — including when the client vanishes in the middle of the body.
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { crc32 } from 'node:zlib';
import qiniu from 'qiniu';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { sendHead } from '../helpers/http.js';
import { RawUp, upToken } from '../helpers/resumable.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import {
  createBucket,
  expectError,
  expectStored,
  multipart,
  postMultipart,
  postRoot,
  stagingFiles,
  startSplitUpload,
  uploadParts,
  waitUntil,
  type Part,
} from '../helpers/upload.js';

const BUCKET = 'bad-input';
const KEY = 'keep.bin';
const ORIGINAL = Buffer.from('the original bytes, which no bad request may change');
const OTHER = randomBytes(64 * 1024);
let s: TestServer;
let token: string;

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  token = s.uploadToken({ scope: `${BUCKET}:${KEY}` }); // overwrite allowed: only validation stands in the way
  const ok = await postMultipart(s, uploadParts(token, KEY, ORIGINAL));
  expect(ok.status, ok.text).toBe(200);
});
afterAll(async () => s?.stop());
afterEach(async () => {
  // Nothing lost, nothing leaked.
  await expectStored(s, BUCKET, KEY, ORIGINAL);
  expect(await stagingFiles(s)).toEqual([]);
});

/** A token over arbitrary policy text, correctly signed (so only the policy text is wrong). */
function signedToken(encodedPolicy: string): string {
  return `${AK}:${qiniu.util.base64ToUrlSafe(qiniu.util.hmacSha1(encodedPolicy, SK))}:${encodedPolicy}`;
}

describe('positive controls for the hand-built multipart bodies', () => {
  it('qiniu-js field order (file first, then token, key, crc32) is accepted', async () => {
    const content = Buffer.from('file part first');
    const t = s.uploadToken({ scope: BUCKET });
    const parts: Part[] = [
      { name: 'file', value: content, filename: 'first.txt', contentType: 'text/plain' },
      { name: 'token', value: t },
      { name: 'key', value: 'file-first.txt' },
      { name: 'crc32', value: String(crc32(content)) },
    ];
    const a = await postMultipart(s, parts);
    expect(a.status, a.text).toBe(200);
    expect(a.json).toEqual({ hash: qetag(content), key: 'file-first.txt' });
    await expectStored(s, BUCKET, 'file-first.txt', content);
  });
});

describe('malformed requests → 400', () => {
  it('garbage body with a multipart content type', async () => {
    expectError(await postRoot(s, 'this is not multipart at all', 'multipart/form-data; boundary=xyz'), 400, /multipart/);
  });

  it('multipart content type without a boundary', async () => {
    expectError(await postRoot(s, 'whatever', 'multipart/form-data'), 400, /multipart/);
  });

  it('a multipart body that ends before its closing boundary', async () => {
    const { body, contentType } = multipart(uploadParts(token, KEY, OTHER));
    expectError(await postRoot(s, body.subarray(0, body.length - 100), contentType), 400, /multipart/);
  });

  it.each([
    ['application/json', '{"token":"x"}'],
    ['application/x-www-form-urlencoded', 'token=x&key=y'],
    ['application/octet-stream', 'raw bytes'],
    ['text/plain', 'text'],
    [undefined, ''],
  ])('non-multipart POST / (content type %s)', async (ct, body) => {
    expectError(await postRoot(s, body, ct), 400, /multipart/);
  });

  it('a request head over 16 KiB → 400 JSON with Connection: close; a keep-alive client goes on on a new socket', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string): Promise<{ status: number; connection: string | undefined; text: string }> =>
      new Promise((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: s.running.port, method: 'POST', path, agent, headers: { 'content-length': 0 } }, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, text }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const long = await get(`/mkfile/1/key/${'a'.repeat(20 * 1024)}`);
      expect(long.status, long.text).toBe(400);
      expect(long.connection).toBe('close');
      expect(JSON.parse(long.text)).toEqual({ error: expect.stringMatching(/16 KiB/) });
      expect((await get('/')).status).toBe(400); // the next request on the same agent is answered
    } finally {
      agent.destroy();
    }
  });

  it('no file part', async () => {
    expectError(await postMultipart(s, [{ name: 'token', value: token }, { name: 'key', value: KEY }]), 400, /^file is not specified in multipart$/);
  });

  it('the content under another part name than "file"', async () => {
    const parts: Part[] = [
      { name: 'token', value: token },
      { name: 'key', value: KEY },
      { name: 'data', value: OTHER, filename: 'f.bin', contentType: 'application/octet-stream' },
    ];
    expectError(await postMultipart(s, parts), 400, /^file is not specified in multipart$/);
  });

  it('a key over 750 bytes', async () => {
    const long = 'k'.repeat(751);
    const t = s.uploadToken({ scope: BUCKET });
    expectError(await postMultipart(s, uploadParts(t, long, OTHER)), 400, /key too long/);
  });

  it('a crc32 that is not a number', async () => {
    expectError(await postMultipart(s, uploadParts(token, KEY, OTHER, { crc32: 'abc' })), 400, /crc32/);
  });
});

describe('invalid put policies → 400', () => {
  const deadline = Math.floor(Date.now() / 1000) + 3600;
  it.each([
    ['no scope', { deadline }],
    ['no deadline', { scope: BUCKET }],
    // (A returnBody that is not JSON is answered as rendered, as Kodo does: test/e2e/sdk-compat-upload.test.ts.)
    ['a JSON callbackBody that is not JSON', { scope: BUCKET, deadline, callbackUrl: 'http://127.0.0.1/cb', callbackBody: '{"k": $(key)', callbackBodyType: 'application/json' }],
    ['callbackUrl without callbackBody', { scope: BUCKET, deadline, callbackUrl: 'http://127.0.0.1/cb' }],
    ['forceSaveKey without saveKey', { scope: BUCKET, deadline, forceSaveKey: true }],
    ['trafficLimit out of range', { scope: BUCKET, deadline, trafficLimit: 1 }],
    ['fsizeMin above fsizeLimit', { scope: BUCKET, deadline, fsizeMin: 10, fsizeLimit: 5 }],
  ])('%s', async (_name, policy) => {
    const t = signedToken(qiniu.util.urlsafeBase64Encode(JSON.stringify(policy)));
    expectError(await postMultipart(s, uploadParts(t, KEY, OTHER)), 400, /invalid put policy/);
  });
});

describe('integrity', () => {
  it('a wrong crc32 → 406', async () => {
    const wrong = String((crc32(OTHER) + 1) >>> 0);
    expectError(await postMultipart(s, uploadParts(token, KEY, OTHER, { crc32: wrong })), 406, /crc32/);
  });

  it('the right crc32 on a new key passes (the 406 above is about the value)', async () => {
    const t = s.uploadToken({ scope: BUCKET });
    const a = await postMultipart(s, uploadParts(t, 'crc-ok.bin', OTHER, { crc32: String(crc32(OTHER)) }));
    expect(a.status, a.text).toBe(200);
  });
});

describe('bad tokens → 401', () => {
  it('no token field', async () => {
    const parts = uploadParts(token, KEY, OTHER).filter((p) => p.name !== 'token');
    expectError(await postMultipart(s, parts), 401, /token not specified/);
  });

  it('a broken signature', async () => {
    const [ak, sign, policy] = token.split(':') as [string, string, string];
    const broken = `${ak}:${sign.startsWith('A') ? 'B' : 'A'}${sign.slice(1)}:${policy}`;
    expectError(await postMultipart(s, uploadParts(broken, KEY, OTHER)), 401, /bad token/);
  });

  it('a signature made with another secret key', async () => {
    const forged = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${KEY}` }).uploadToken(new qiniu.auth.digest.Mac(AK, 'wrong-secret'));
    expectError(await postMultipart(s, uploadParts(forged, KEY, OTHER)), 401, /bad token/);
  });

  it('an unknown access key', async () => {
    const foreign = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${KEY}` }).uploadToken(new qiniu.auth.digest.Mac('someone-else', SK));
    expectError(await postMultipart(s, uploadParts(foreign, KEY, OTHER)), 401, /bad token/);
  });

  it('a policy part that is not base64 (correctly signed)', async () => {
    expectError(await postMultipart(s, uploadParts(signedToken('not*base64!'), KEY, OTHER)), 401, /bad token/);
  });

  it('a policy part that is base64 but not JSON (correctly signed)', async () => {
    expectError(await postMultipart(s, uploadParts(signedToken(Buffer.from('not json').toString('base64')), KEY, OTHER)), 401, /bad token/);
  });

  it('a token with no colons', async () => {
    expectError(await postMultipart(s, uploadParts('garbage', KEY, OTHER)), 401, /bad token/);
  });

  it('a bad token after the file part (qiniu-js order)', async () => {
    const parts: Part[] = [
      { name: 'file', value: OTHER, filename: 'f.bin', contentType: 'application/octet-stream' },
      { name: 'token', value: signedToken('not*base64!') },
      { name: 'key', value: KEY },
    ];
    expectError(await postMultipart(s, parts), 401, /bad token/);
  });
});

describe('a client that vanishes mid-body', () => {
  /** Sends half of an upload that would replace KEY, waits until the server stages it, then drops the socket. */
  async function cutOff(parts: Part[], framing: 'content-length' | 'chunked'): Promise<void> {
    const upload = await startSplitUpload(s, parts, framing);
    await upload.destroy();
    await waitUntil(async () => (await stagingFiles(s)).length === 0, 'the server discards the partial file');
    expect(upload.answered()).toBe(false); // the server never answered a half body as if it were complete
  }

  const big = randomBytes(4 * 1024 * 1024);

  it.each(['content-length', 'chunked'] as const)('token first, %s framing: existing object intact, tmp empty', async (framing) => {
    await cutOff(uploadParts(token, KEY, big), framing);
  });

  it('file first (qiniu-js order): existing object intact, tmp empty', async () => {
    await cutOff([{ name: 'file', value: big, filename: 'f.bin', contentType: 'application/octet-stream' }, { name: 'token', value: token }], 'chunked');
  });

  it('the server still accepts a complete upload afterwards', async () => {
    const t = s.uploadToken({ scope: BUCKET });
    const a = await postMultipart(s, uploadParts(t, 'after-cutoff.bin', big));
    expect(a.status, a.text).toBe(200);
    expect(a.json).toEqual({ hash: qetag(big), key: 'after-cutoff.bin' });
    await expectStored(s, BUCKET, 'after-cutoff.bin', big);
  });
});

describe('a part cut off inside a field other than the file (it used to end the process)', () => {
  it.each([
    ['a file part under another name', '--X\r\nContent-Disposition: form-data; name="other"; filename="a"\r\n\r\nabc'],
    ['the file after a bad token', '--X\r\nContent-Disposition: form-data; name="token"\r\n\r\nbad:bad:bad\r\n--X\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc'],
  ])('%s → a JSON 4xx, and the server keeps serving', async (_name, body) => {
    const a = await postRoot(s, body, 'multipart/form-data; boundary=X');
    expect(a.status).toBeGreaterThanOrEqual(400);
    expect(a.status).toBeLessThan(500);
    expect(a.json).toEqual({ error: expect.any(String) });
    expect((await fetch(`${s.url}/health/live`)).status).toBe(200);
  });
});

/** Sends a request head declaring `length` body bytes and only the beginning of them; resolves with the early answer. */
const declare = (method: string, path: string, length: number, headers: Record<string, string>): Promise<{ status: number; text: string }> =>
  sendHead(s.running.port, method, path, { ...headers, 'content-length': String(length) }, '--X\r\n');

describe('a declared size over the limits is refused before the body is read', () => {
  it('form upload: Content-Length over GRANARY_MAX_OBJECT_SIZE (+ room for fields) → 413 at once', async () => {
    const tooBig = s.running.g.config.maxObjectBytes + s.running.g.config.maxBodyBytes + 1;
    const a = await declare('POST', '/', tooBig, { 'content-type': 'multipart/form-data; boundary=X' });
    expect(a.status).toBe(413);
    expect(JSON.parse(a.text).error).toMatch(/GRANARY_MAX_OBJECT_SIZE/);
  });

  it('v2 part: Content-Length over 1 GiB → 413 at once; mkblk: a chunk longer than its block → 400 at once', async () => {
    const up = upToken({ scope: BUCKET });
    const init = (await (await fetch(`${s.url}/buckets/${BUCKET}/objects/~/uploads`, { method: 'POST', headers: { authorization: `UpToken ${up}` } })).json()) as { uploadId: string };
    const part = await declare('PUT', `/buckets/${BUCKET}/objects/~/uploads/${init.uploadId}/1`, 1024 ** 3 + 1, { authorization: `UpToken ${up}` });
    expect(part.status).toBe(413);
    const blk = await declare('POST', '/mkblk/1024', 4096, { authorization: `UpToken ${up}`, 'content-type': 'application/octet-stream' });
    expect(blk.status).toBe(400);
    expect(JSON.parse(blk.text).error).toMatch(/larger than the rest of its block/);
  });
});

describe('mkblk and bput check the scope bucket at once', () => {
  it('a token for a missing bucket → 631, for another account\'s bucket → 403; nothing is staged', async () => {
    const missing = new RawUp(s.url, upToken({ scope: 'no-such-bucket' }));
    expectError(await missing.mkblk(3, Buffer.from('abc')), 631);
    const pair = await s.running.g.keyIndex.create(0);
    const mallory = new RawUp(s.url, upToken({ scope: BUCKET }, new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey)));
    expectError(await mallory.mkblk(3, Buffer.from('abc')), 403);
    const root = new RawUp(s.url, upToken({ scope: BUCKET }));
    const ctx = ((await root.mkblk(6, Buffer.from('abc'))).json as { ctx: string }).ctx;
    expectError(await mallory.bput(ctx, 3, Buffer.from('def')), 403);
    expect(await stagingFiles(s)).toEqual([]);
  });
});
