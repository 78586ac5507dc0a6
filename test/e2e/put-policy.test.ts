/**
 * Put policy, everything but the key (docs/development/kodo-protocol.md §3.1, §4.2): size limits, MIME detection and limits, the token
 * deadline, endUser, returnUrl, deleteAfterDays and persistentOps. Time moves with the server's AdjustableClock,
 * never with sleeps. Refusals store nothing.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import {
  FIXTURE_IMAGES,
  createBucket,
  download,
  expectAbsent,
  expectStored,
  stagingFiles,
  startSplitUpload,
  uploadParts,
} from '../helpers/upload.js';

let s: TestServer;
let jpeg: Buffer;
const TEXT = Buffer.from('just some plain text, not an image\n');
const BUCKET = 'policies';

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  jpeg = await readFile(join(FIXTURE_IMAGES, 'Canon_40D.jpg'));
});
afterAll(async () => s?.stop());
afterEach(() => {
  // Tests that move time put it back, so every test's tokens are valid.
  s.clock.offsetMs = 0;
});

interface Answer {
  status: number;
  data: Record<string, unknown>;
}

function put(policy: Record<string, unknown> | string, key: string | null, content: Buffer, extra = new qiniu.form_up.PutExtra()): Promise<Answer> {
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  const token = typeof policy === 'string' ? policy : s.uploadToken(policy);
  return sdk<Record<string, unknown>>(key === null ? up.putWithoutKey(token, content, extra) : up.put(token, key, content, extra));
}

function expectError(r: Answer, status: number, msg: RegExp): void {
  expect(r.status, JSON.stringify(r.data)).toBe(status);
  expect(r.data).toEqual({ error: expect.stringMatching(msg) });
}

describe('size limits', () => {
  it('fsizeLimit: a larger file is 413, a file of exactly the limit passes', async () => {
    const policy = { scope: BUCKET, fsizeLimit: 10 };
    expectError(await put(policy, 'big.bin', Buffer.alloc(11, 1)), 413, /fsizeLimit/);
    await expectAbsent(s, BUCKET, 'big.bin');
    expect((await put(policy, 'ten.bin', Buffer.alloc(10, 1))).status).toBe(200);
  });

  it('fsizeMin: a smaller file is 403, a file of exactly the minimum passes', async () => {
    const policy = { scope: BUCKET, fsizeMin: 10 };
    expectError(await put(policy, 'small.bin', Buffer.alloc(9, 1)), 403, /^request entity size is smaller than FsizeMin$/);
    await expectAbsent(s, BUCKET, 'small.bin');
    expect((await put(policy, 'min.bin', Buffer.alloc(10, 1))).status).toBe(200);
  });
});

describe('MIME type', () => {
  it('mimeLimit image/* refuses a text file with 403 and accepts a jpeg', async () => {
    const policy = { scope: BUCKET, mimeLimit: 'image/*' };
    expectError(await put(policy, 'note.txt', TEXT), 403, /limited mimeType/);
    await expectAbsent(s, BUCKET, 'note.txt');
    const r = await put(policy, 'photo', jpeg);
    expect(r).toEqual({ status: 200, data: { hash: qetag(jpeg), key: 'photo' } });
    expect((await expectStored(s, BUCKET, 'photo', jpeg)).headers.get('content-type')).toBe('image/jpeg');
  });

  it('mimeLimit checks the content, not what the client claims', async () => {
    const extra = new qiniu.form_up.PutExtra('fake.png', {}, 'image/png');
    expectError(await put({ scope: BUCKET, mimeLimit: 'image/*' }, 'fake.png', TEXT, extra), 403, /limited mimeType/);
    await expectAbsent(s, BUCKET, 'fake.png');
  });

  it('a deny list (leading !) refuses the listed types', async () => {
    const policy = { scope: BUCKET, mimeLimit: '!image/jpeg;image/png' };
    expectError(await put(policy, 'denied.jpg', jpeg), 403, /limited mimeType/);
    expect((await put(policy, 'allowed.txt', TEXT)).status).toBe(200);
  });

  it('detectMime:1 stores the sniffed type, ignoring the client type', async () => {
    const extra = new qiniu.form_up.PutExtra('x.txt', {}, 'text/plain');
    expect((await put({ scope: BUCKET, detectMime: 1 }, 'sniffed', jpeg, extra)).status).toBe(200);
    expect((await download(s, BUCKET, 'sniffed')).headers.get('content-type')).toBe('image/jpeg');
  });

  it('detectMime:0 keeps a client type, and sniffs when the client sent octet-stream', async () => {
    const extra = new qiniu.form_up.PutExtra('x.txt', {}, 'text/plain');
    expect((await put({ scope: BUCKET }, 'claimed', jpeg, extra)).status).toBe(200);
    expect((await download(s, BUCKET, 'claimed')).headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await put({ scope: BUCKET }, 'unnamed', jpeg)).status).toBe(200); // SDK default: octet-stream
    expect((await download(s, BUCKET, 'unnamed')).headers.get('content-type')).toBe('image/jpeg');
  });

  it('detectMime:-1 trusts the client verbatim, even octet-stream', async () => {
    expect((await put({ scope: BUCKET, detectMime: -1 }, 'trusted', jpeg)).status).toBe(200);
    expect((await download(s, BUCKET, 'trusted')).headers.get('content-type')).toBe('application/octet-stream');
  });
});

describe('deadline', () => {
  it('an expired token is 401 and stores nothing', async () => {
    const token = new qiniu.rs.PutPolicy({ scope: BUCKET, expires: 1 }).uploadToken(s.mac);
    s.clock.advance(3600);
    expectError(await put(token, 'late.txt', TEXT), 401, /expired token/);
    s.clock.offsetMs = 0;
    await expectAbsent(s, BUCKET, 'late.txt');
  });

  it('a crafted policy with a deadline in the past is 401; the same upload with a future deadline works', async () => {
    const now = Math.floor(Date.now() / 1000);
    const sign = (policy: object): string => {
      const encoded = qiniu.util.urlsafeBase64Encode(JSON.stringify(policy));
      return `${s.mac.accessKey}:${qiniu.util.base64ToUrlSafe(qiniu.util.hmacSha1(encoded, s.mac.secretKey))}:${encoded}`;
    };
    expectError(await put(sign({ scope: BUCKET, deadline: now - 10 }), 'crafted.txt', TEXT), 401, /expired token/);
    expect((await put(sign({ scope: BUCKET, deadline: now + 600 }), 'crafted.txt', TEXT)).status).toBe(200);
  });
});

describe('deadline checked when the object is created', () => {
  it('a token that expires while the body is still arriving is 401; nothing is stored', async () => {
    const t = new qiniu.rs.PutPolicy({ scope: BUCKET, expires: 60 }).uploadToken(s.mac);
    const upload = await startSplitUpload(s, uploadParts(t, 'slow.bin', Buffer.alloc(2 * 1024 * 1024, 3)), 'chunked');
    s.clock.advance(120);
    const a = await upload.finish();
    expect(a.status, a.text).toBe(401);
    expect(JSON.parse(a.text)).toEqual({ error: expect.stringMatching(/expired token/) });
    await expectAbsent(s, BUCKET, 'slow.bin');
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('the same slow upload within the deadline succeeds', async () => {
    const body = Buffer.alloc(2 * 1024 * 1024, 4);
    const t = new qiniu.rs.PutPolicy({ scope: BUCKET, expires: 60 }).uploadToken(s.mac);
    const upload = await startSplitUpload(s, uploadParts(t, 'slow-ok.bin', body), 'chunked');
    s.clock.advance(30);
    const a = await upload.finish();
    expect(a.status, a.text).toBe(200);
    await expectStored(s, BUCKET, 'slow-ok.bin', body);
  });
});

describe('response shaping', () => {
  it('endUser is available as $(endUser)', async () => {
    const r = await put({ scope: BUCKET, endUser: 'user-42', returnBody: '{"endUser":$(endUser),"key":$(key)}' }, 'eu.txt', TEXT);
    expect(r).toEqual({ status: 200, data: { endUser: 'user-42', key: 'eu.txt' } });
  });

  it('returnUrl answers 303 with Location <returnUrl>?upload_ret=<urlsafe b64 of the body>', async () => {
    const token = s.uploadToken({ scope: BUCKET, returnUrl: 'http://app.example.com/done', returnBody: '{"key":$(key),"size":$(fsize)}' });
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    const { resp } = await up.put(token, 'redirected.txt', TEXT, new qiniu.form_up.PutExtra());
    expect(resp.statusCode).toBe(303);
    const location = String(resp.headers.location);
    const m = /^http:\/\/app\.example\.com\/done\?upload_ret=([A-Za-z0-9_=-]+)$/.exec(location);
    expect(m, location).not.toBeNull();
    const ret = Buffer.from((m?.[1] ?? '').replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
    expect(JSON.parse(ret)).toEqual({ key: 'redirected.txt', size: TEXT.length });
    await expectStored(s, BUCKET, 'redirected.txt', TEXT);
  });

  it('returnUrl with a query string gets &upload_ret=', async () => {
    const token = s.uploadToken({ scope: BUCKET, returnUrl: 'http://app.example.com/done?from=up' });
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    const { resp } = await up.put(token, 'redirected-2.txt', TEXT, new qiniu.form_up.PutExtra());
    expect(resp.statusCode).toBe(303);
    expect(String(resp.headers.location)).toMatch(/^http:\/\/app\.example\.com\/done\?from=up&upload_ret=[A-Za-z0-9_=-]+$/);
  });

  it('persistentOps: the default body carries persistentId, $(persistentId) renders it', async () => {
    const r = await put({ scope: BUCKET, persistentOps: 'imageInfo' }, 'ops.jpg', jpeg);
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ hash: qetag(jpeg), key: 'ops.jpg', persistentId: expect.stringMatching(/\S/) });
    const r2 = await put({ scope: BUCKET, persistentOps: 'imageInfo', returnBody: '{"id":$(persistentId)}' }, 'ops-2.jpg', jpeg);
    expect(r2.status).toBe(200);
    expect(r2.data.id).toEqual(expect.stringMatching(/\S/));
    expect(r2.data.id).not.toBe(r.data.persistentId);
  });
});

describe('deleteAfterDays', () => {
  it('the object is served until its lifetime is over, then it is gone (clock moved, no sleep)', async () => {
    expect((await put({ scope: BUCKET, deleteAfterDays: 1 }, 'ephemeral.txt', TEXT)).status).toBe(200);
    expect((await put({ scope: BUCKET }, 'durable.txt', TEXT)).status).toBe(200);
    await expectStored(s, BUCKET, 'ephemeral.txt', TEXT);
    s.clock.advance(2 * 86400);
    await expectAbsent(s, BUCKET, 'ephemeral.txt');
    await expectStored(s, BUCKET, 'durable.txt', TEXT);
  });

  it('a 1-day object is still there just under a day later', async () => {
    expect((await put({ scope: BUCKET, deleteAfterDays: 1 }, 'day.txt', TEXT)).status).toBe(200);
    s.clock.advance(86400 - 60);
    await expectStored(s, BUCKET, 'day.txt', TEXT);
  });
});
