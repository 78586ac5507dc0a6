/**
 * Uploads exactly as Qiniu's PHP, Python, Java and Go SDKs send them,
 * on the wire with fetch: the bytes each SDK writes, and the part of the answer each SDK reads. The SDK file and
 * function quoted above each test is where the request is built or the answer read.
 */
import { createHash } from 'node:crypto';
import { crc32 } from '@node-rs/crc32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag, qetagV2 } from '../helpers/etag.js';
import { ok, RawUp, upToken, type BlockJson, type PartJson } from '../helpers/resumable.js';
import { b64 } from '../helpers/rs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectError, expectStored, postRoot, readAnswer, type RawAnswer } from '../helpers/upload.js';

const BUCKET = 'sdk-up';
const MiB = 1024 * 1024;

/** Every byte value, so a lossy text decoding of the file shows. */
const BINARY = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));

/**
 * The body php-sdk's `Client::multipartPost` (src/Qiniu/Http/Client.php) builds: fields, then the file part with
 * `filename="<fname>"` and `Content-Type: <mime>`, lines joined by CRLF, boundary an md5 hex.
 */
function phpMultipart(fields: Record<string, string>, fname: string | undefined, mime: string, data: Buffer): { body: Buffer; type: string } {
  const boundary = createHash('md5').update(String(Math.random())).digest('hex');
  const head: string[] = [];
  for (const [k, v] of Object.entries(fields)) head.push(`--${boundary}`, `Content-Disposition: form-data; name="${k}"`, '', v);
  head.push(`--${boundary}`);
  head.push(fname === undefined ? 'Content-Disposition: form-data; name="file"' : `Content-Disposition: form-data; name="file"; filename="${fname}"`);
  head.push(`Content-Type: ${mime}`, '', '');
  const body = Buffer.concat([Buffer.from(head.join('\r\n')), data, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

describe('SDK uploads on the wire', () => {
  let s: TestServer;
  let up: RawUp;

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, BUCKET);
    up = new RawUp(s.url, upToken({ scope: BUCKET, deadline: Math.floor(Date.now() / 1000) + 3600 }));
  });
  afterAll(async () => s.stop());

  const token = (policy: Record<string, unknown>): string => s.uploadToken({ scope: BUCKET, ...policy });

  describe('form upload', () => {
    // php-sdk 7.x src/Qiniu/Storage/FormUploader.php put → Client::multipartPost(…, 'file', $fname, $data, $mime)
    it('php-sdk 7.x UploadManager::put: file part with filename="" and Content-Type text/plain is the file (bytes exact, fname empty)', async () => {
      const t = token({ scope: `${BUCKET}:php-empty-name`, returnBody: '{"key":$(key),"hash":$(etag),"fname":$(fname),"fsize":$(fsize)}' });
      const { body, type } = phpMultipart({ token: t, key: 'php-empty-name' }, '', 'text/plain', BINARY);
      const a = await postRoot(s, body, type);
      // php-sdk Http/Response.php: a 200 application/json answer is decoded whole.
      expect(ok<unknown>(a)).toEqual({ key: 'php-empty-name', hash: qetag(BINARY), fname: '', fsize: BINARY.length });
      await expectStored(s, BUCKET, 'php-empty-name', BINARY);
    });

    it('php-sdk 7.x UploadManager::put: a file part with no filename at all and any content type is the file', async () => {
      const t = token({ scope: `${BUCKET}:php-no-name` });
      const { body, type } = phpMultipart({ token: t, key: 'php-no-name' }, undefined, 'image/png', BINARY);
      expect(ok<unknown>(await postRoot(s, body, type))).toEqual({ key: 'php-no-name', hash: qetag(BINARY) });
      await expectStored(s, BUCKET, 'php-no-name', BINARY);
    });

    it('php-sdk 7.x: text fields next to such a file keep their UTF-8 (key and x: variable)', async () => {
      const key = 'php-ключ-键';
      const t = token({ scope: `${BUCKET}:${key}` });
      const { body, type } = phpMultipart({ token: t, key, 'x:who': 'café 七牛' }, '', 'text/plain', Buffer.from('hi'));
      expect(ok<unknown>(await postRoot(s, body, type))).toEqual({ key, hash: qetag(Buffer.from('hi')), 'x:who': 'café 七牛' });
    });

    // python-sdk 7.x qiniu/services/storage/uploader.py put_data (form); qiniu/http/response.py reads the body with
    // `json()`, which answers {} for a body that does not parse, and needs X-Reqid on a 200.
    it('python-sdk 7.x put_data: returnBody " " stores the object and answers the rendered text', async () => {
      const t = token({ scope: `${BUCKET}:py-space`, returnBody: ' ' });
      const { body, type } = phpMultipart({ token: t, key: 'py-space' }, 'a.txt', 'application/octet-stream', Buffer.from('space'));
      const a = await postRoot(s, body, type);
      expect(a.status).toBe(200);
      expect(a.text).toBe(' ');
      expect(a.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(a.headers.get('x-reqid')).toBeTruthy();
      await expectStored(s, BUCKET, 'py-space', Buffer.from('space'));
    });

    it('python-sdk 7.x: a returnBody that renders to JSON is still application/json', async () => {
      const t = token({ scope: `${BUCKET}:py-json`, returnBody: '{"k":"$(key)"}' });
      const { body, type } = phpMultipart({ token: t, key: 'py-json' }, 'a.txt', 'application/octet-stream', Buffer.from('j'));
      const a = await postRoot(s, body, type);
      expect(a.headers.get('content-type')).toMatch(/^application\/json/);
      expect(a.json).toEqual({ k: 'py-json' });
    });
  });

  describe('resumable v2', () => {
    /** init + parts + complete with the complete body sent as `completeType`; the answer of complete. */
    async function v2(key: string | undefined, parts: Buffer[], completeType: string, path?: string, client = up): Promise<RawAnswer> {
      const base = path ?? client.uploadsPath(BUCKET, key);
      const call = async (method: string, p: string, body: Buffer | string, type: string): Promise<RawAnswer> =>
        readAnswer(await fetch(`${s.url}${p}`, { method, body, headers: { authorization: `UpToken ${client.token}`, 'content-type': type } }));
      const { uploadId } = ok<{ uploadId: string }>(await call('POST', base, '', 'application/json'));
      const list: Array<{ partNumber: number; etag: string }> = [];
      for (const [i, data] of parts.entries()) {
        list.push({ partNumber: i + 1, etag: ok<PartJson>(await call('PUT', `${base}/${uploadId}/${i + 1}`, data, 'application/octet-stream')).etag });
      }
      return call('POST', `${base}/${uploadId}`, JSON.stringify({ parts: list, fname: 'f.bin', mimeType: 'application/octet-stream' }), completeType);
    }

    // java-sdk src/main/java/com/qiniu/storage/ApiUploadV2CompleteUpload.java: the part list as a JSON byte array
    // posted with Client.DefaultMime (application/octet-stream).
    it('java-sdk 7.x FixBlockUploader: complete with Content-Type application/octet-stream is read as JSON', async () => {
      const data = Buffer.from('java complete');
      expect(ok<unknown>(await v2('java-octet', [data], 'application/octet-stream'))).toEqual({ key: 'java-octet', hash: qetag(data) });
      await expectStored(s, BUCKET, 'java-octet', data);
    });

    it('java-sdk 7.x: complete without any Content-Type is read as JSON too', async () => {
      const data = Buffer.from('no type');
      const t = upToken({ scope: BUCKET, deadline: Math.floor(Date.now() / 1000) + 3600 });
      const base = up.uploadsPath(BUCKET, 'no-ct');
      const { uploadId } = ok<{ uploadId: string }>(await up.init(BUCKET, 'no-ct'));
      const { etag } = ok<PartJson>(await up.part(BUCKET, 'no-ct', uploadId, 1, data));
      const res = await fetch(`${s.url}${base}/${uploadId}`, {
        method: 'POST',
        headers: { authorization: `UpToken ${t}` },
        body: new Blob([JSON.stringify({ parts: [{ partNumber: 1, etag }] })]),
      });
      expect(ok<unknown>(await readAnswer(res))).toEqual({ key: 'no-ct', hash: qetag(data) });
    });

    // go-sdk storage/etag.go EtagV2 / is4MbParts and java-sdk util/EtagV2.java is4MBParts: the 0x9e form unless
    // every part but the last is 4 MiB and the last is at most 4 MiB. FixBlockUploaderTest's 6 MiB cases compare.
    it.each([
      ['one 6 MiB part', [6 * MiB]],
      ['4 MiB then 6 MiB', [4 * MiB, 6 * MiB]],
      ['6 MiB then 1 KiB', [6 * MiB, 1024]],
    ])('java-sdk 7.x / go-sdk v7 etag: %s → the 0x9e form the SDKs compute', async (_name, sizes) => {
      const parts = sizes.map((n, i) => Buffer.alloc(n, i + 1));
      const a = ok<{ hash: string }>(await v2(`etag-${sizes.join('-')}`, parts, 'application/json'));
      expect(a.hash).toBe(sdkEtagV2(parts));
      expect(a.hash.startsWith('n')).toBe(true);
    });

    it.each([
      ['one 4 MiB part', [4 * MiB]],
      ['4 MiB then 4 MiB then 1 byte', [4 * MiB, 4 * MiB, 1]],
      ['4 MiB then an empty part', [4 * MiB, 0]],
      ['one 3 MiB part', [3 * MiB]],
    ])('java-sdk 7.x / go-sdk v7 etag: %s → the plain etag of the content', async (_name, sizes) => {
      const parts = sizes.map((n, i) => Buffer.alloc(n, i + 1));
      const a = ok<{ hash: string }>(await v2(`plain-${sizes.join('-')}`, parts, 'application/json'));
      expect(a.hash).toBe(qetag(Buffer.concat(parts)));
      expect(a.hash).toBe(sdkEtagV2(parts));
      expect(qetagV2(parts)).toBe(a.hash);
    });

    // go-sdk storage/resume_uploader_v2.go and java-sdk ApiUploadV2InitUpload: the object name is
    // urlsafe_b64(key), which is empty for the key "".
    it('go-sdk v7 / java-sdk 7.x ResumeUploader v2: an empty object name stores under the key ""', async () => {
      const data = Buffer.from('empty key');
      const a = await v2(undefined, [data], 'application/json', `/buckets/${BUCKET}/objects//uploads`);
      expect(ok<unknown>(a)).toEqual({ key: '', hash: qetag(data) });
      const stat = await s.running.g.meta.getObject(BUCKET, '');
      expect(stat?.hash).toBe(qetag(data));
    });
  });

  describe('resumable v1', () => {
    // java-sdk src/main/java/com/qiniu/storage/StreamUploader.java upload(): it reads 4 MiB blocks until read()
    // answers -1, so a stream of exactly 4 MiB sends mkblk/4194304, then mkblk/0 with an empty body, and lists both
    // ctxs at mkfile (`/mkfile/<size>/mimeType/<b64>` with `key` after it).
    it('java-sdk 7.x StreamUploader: a stream of exactly 4 MiB (mkblk/4194304, mkblk/0, mkfile)', async () => {
      const data = Buffer.alloc(4 * MiB, 9);
      const first = ok<BlockJson>(await up.mkblk(4 * MiB, data));
      const empty = ok<BlockJson>(await up.mkblk(0, Buffer.alloc(0)));
      expect(empty).toMatchObject({ ctx: expect.any(String), offset: 0, crc32: 0 });
      const path = `/mkfile/${4 * MiB}/mimeType/${b64('application/octet-stream')}/key/${b64('java-stream-4m')}`;
      const res = await fetch(`${s.url}${path}`, {
        method: 'POST',
        headers: { authorization: `UpToken ${up.token}`, 'content-type': 'application/octet-stream' },
        body: `${first.ctx},${empty.ctx}`,
      });
      expect(ok<unknown>(await readAnswer(res))).toEqual({ key: 'java-stream-4m', hash: qetag(data) });
      await expectStored(s, BUCKET, 'java-stream-4m', data);
    });

    it('java-sdk 7.x StreamUploader: an empty stream (mkblk/0, mkfile/0 with its ctx) is an empty object', async () => {
      const empty = ok<BlockJson>(await up.mkblk(0, Buffer.alloc(0)));
      const a = ok<{ hash: string }>(await up.mkfile(0, [empty.ctx], { key: 'java-stream-0' }));
      expect(a.hash).toBe(qetag(Buffer.alloc(0)));
    });

    it('mkblk/0 with a body is refused (400) and an empty block in the middle of a file too', async () => {
      expectError(await up.mkblk(0, Buffer.from('x')), 400);
      const empty = ok<BlockJson>(await up.mkblk(0, Buffer.alloc(0)));
      const tail = ok<BlockJson>(await up.mkblk(3, Buffer.from('abc')));
      expectError(await up.mkfile(3, [empty.ctx, tail.ctx], { key: 'mid-empty' }), 400);
    });
  });

  describe('putb64', () => {
    /**
     * go-sdk storage/base64_upload.go put(): `/putb64/<fsize>[/key/<b64>][/mimeType/<b64>]/crc32/<n>[/x:<k>/<b64>]`,
     * `Content-Type: application/octet-stream`, `Authorization: UpToken <token>`, the body standard base64.
     */
    async function putb64(path: string, body: string, t: string, type = 'application/octet-stream'): Promise<RawAnswer> {
      return readAnswer(await fetch(`${s.url}${path}`, { method: 'POST', headers: { authorization: `UpToken ${t}`, 'content-type': type }, body }));
    }
    const goPath = (data: Buffer, key: string, extra = ''): string =>
      `/putb64/${data.length}/key/${b64(key)}/mimeType/${b64('image/png')}/crc32/${crc32(data)}${extra}`;

    it('go-sdk v7 Base64Uploader.Put: stores the decoded bytes with key, mimeType, crc32 and x: variables', async () => {
      const t = token({ scope: `${BUCKET}:b64-go` });
      const a = await putb64(goPath(BINARY, 'b64-go', `/x:foo/${b64('bar')}`), BINARY.toString('base64'), t);
      // go-sdk CallWith decodes the JSON answer into PutRet {Hash, Key}.
      expect(ok<unknown>(a)).toEqual({ key: 'b64-go', hash: qetag(BINARY), 'x:foo': 'bar' });
      const stored = await expectStored(s, BUCKET, 'b64-go', BINARY);
      expect(stored.headers.get('content-type')).toBe('image/png');
    });

    it('Kodo putb64: fsize -1 (unknown), URL-safe alphabet, line breaks, no key (saveKey / hash)', async () => {
      const t = token({ saveKey: 'b64/$(etag)' });
      const text = BINARY.toString('base64url').replace(/(.{76})/g, '$1\r\n');
      const a = ok<{ key: string; hash: string }>(await putb64('/putb64/-1', text, t, 'text/plain'));
      expect(a).toEqual({ key: `b64/${qetag(BINARY)}`, hash: qetag(BINARY) });
      await expectStored(s, BUCKET, a.key, BINARY);
    });

    it('putb64 applies the whole put policy: fsizeLimit 413, insertOnly 614 (the stored object untouched), crc32 406', async () => {
      const first = Buffer.from('first');
      const t = token({ scope: `${BUCKET}:b64-policy`, insertOnly: 1 });
      ok(await putb64(`/putb64/${first.length}/key/${b64('b64-policy')}`, first.toString('base64'), t));
      const other = Buffer.from('other');
      expectError(await putb64(`/putb64/${other.length}/key/${b64('b64-policy')}`, other.toString('base64'), t), 614);
      await expectStored(s, BUCKET, 'b64-policy', first);
      expectError(await putb64(`/putb64/-1/key/${b64('b64-big')}`, Buffer.alloc(20).toString('base64'), token({ fsizeLimit: 10 })), 413);
      expectError(await putb64(`/putb64/-1/key/${b64('b64-crc')}/crc32/1`, other.toString('base64'), token({})), 406);
      await expectStored(s, BUCKET, 'b64-policy', first);
    });

    it('putb64 refuses bad input with a JSON 400: fsize mismatch, bad base64, bad fsize, dangling parameter; 401 without a token', async () => {
      const t = token({});
      expectError(await putb64('/putb64/3/key/' + b64('x'), Buffer.from('four').toString('base64'), t), 400, /fsize/);
      expectError(await putb64('/putb64/-1', 'not*base64', t), 400, /base64/);
      expectError(await putb64('/putb64/-1', 'QUJD=QQ==', t), 400, /base64/);
      expectError(await putb64('/putb64/-2', 'QUJD', t), 400, /fsize/);
      expectError(await putb64('/putb64/3/key', 'QUJD', t), 400);
      expectError(await readAnswer(await fetch(`${s.url}/putb64/3`, { method: 'POST', body: 'QUJD' })), 401);
    });
  });

  describe('put policy', () => {
    // java-sdk src/test/java/test/com/qiniu/storage/FormUploadTest.java reads Kodo's fsizeMin message.
    it('java-sdk 7.x FormUploader: fsizeMin answers 403 "request entity size is smaller than FsizeMin"', async () => {
      const t = token({ fsizeMin: 100 });
      const { body, type } = phpMultipart({ token: t, key: 'small' }, 'a', 'application/octet-stream', Buffer.from('tiny'));
      expectError(await postRoot(s, body, type), 403, /^request entity size is smaller than FsizeMin$/);
    });
  });
});

/** go-sdk storage/etag.go EtagV2, written out: is4MbParts → plain etag, else 0x9e ‖ sha1(part etag tails). */
function sdkEtagV2(parts: Buffer[]): string {
  const BLOCK = 4 * MiB;
  const sizes = parts.map((p) => p.length);
  const is4MbParts = sizes.slice(0, -1).every((n) => n === BLOCK) && (sizes[sizes.length - 1] ?? 0) <= BLOCK;
  if (is4MbParts) return qetag(Buffer.concat(parts));
  const tails = parts.map((p) => Buffer.from(qetag(p), 'base64url').subarray(1));
  const digest = createHash('sha1').update(Buffer.concat(tails)).digest();
  return Buffer.concat([Buffer.from([0x9e]), digest]).toString('base64url'); // 21 bytes: no padding either way
}
