/**
 * Put policy, which key an upload may land on (docs/development/kodo-protocol.md §3.1, §14 item 19): every scope form with its
 * insert/overwrite semantics, insertOnly, saveKey/forceSaveKey, the etag as the default key, keylimit and
 * the 750-byte key limit. Every refusal leaves the stored object exactly as it was.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectStored } from '../helpers/upload.js';

let s: TestServer;
const A = Buffer.from('content A');
const B = Buffer.from('content B, different');
const BUCKET = 'scopes';

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
});
afterAll(async () => s?.stop());

interface Answer {
  status: number;
  data: Record<string, unknown>;
}

/** Form upload through the SDK (Zone configuration); `key` null = no key field. */
function put(policy: Record<string, unknown>, key: string | null, content: Buffer, extra = new qiniu.form_up.PutExtra()): Promise<Answer> {
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  const token = s.uploadToken({ ...policy });
  return sdk<Record<string, unknown>>(key === null ? up.putWithoutKey(token, content, extra) : up.put(token, key, content, extra));
}

function expectError(r: Answer, status: number, msg: RegExp): void {
  expect(r.status, JSON.stringify(r.data)).toBe(status);
  expect(r.data).toEqual({ error: expect.stringMatching(msg) });
}

describe('scope "bucket": insert semantics', () => {
  it('identical re-upload succeeds, different content is 614 and the original is kept', async () => {
    const policy = { scope: BUCKET };
    expect(await put(policy, 'insert.txt', A)).toEqual({ status: 200, data: { hash: qetag(A), key: 'insert.txt' } });
    expect(await put(policy, 'insert.txt', A)).toEqual({ status: 200, data: { hash: qetag(A), key: 'insert.txt' } });
    expectError(await put(policy, 'insert.txt', B), 614, /file exists/);
    await expectStored(s, BUCKET, 'insert.txt', A);
  });
});

describe('concurrent inserts', () => {
  it('of different content to one new key: exactly one wins, the others get 614, the winner is stored', async () => {
    const contents = Array.from({ length: 6 }, (_, i) => Buffer.from(`racer ${i}`));
    const results = await Promise.all(contents.map((c) => put({ scope: BUCKET }, 'race.txt', c)));
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.status === 614)).toHaveLength(contents.length - 1);
    const winner = contents[winners[0] ?? -1] as Buffer;
    expect(results[winners[0] ?? -1]?.data).toEqual({ hash: qetag(winner), key: 'race.txt' });
    await expectStored(s, BUCKET, 'race.txt', winner);
  });
});

describe('scope "bucket:key"', () => {
  it('overwrites the key', async () => {
    const policy = { scope: `${BUCKET}:exact.txt` };
    expect((await put(policy, 'exact.txt', A)).status).toBe(200);
    expect(await put(policy, 'exact.txt', B)).toEqual({ status: 200, data: { hash: qetag(B), key: 'exact.txt' } });
    await expectStored(s, BUCKET, 'exact.txt', B);
  });

  it('refuses another key (403) and stores nothing there', async () => {
    expectError(await put({ scope: `${BUCKET}:exact.txt` }, 'other.txt', A), 403, /key doesn't match with scope/);
    await expectAbsent(s, BUCKET, 'other.txt');
  });

  it('refuses an upload without a key (403): the etag is not the scope key', async () => {
    expectError(await put({ scope: `${BUCKET}:exact.txt` }, null, A), 403, /key doesn't match with scope/);
    await expectAbsent(s, BUCKET, qetag(A));
  });

  it('with insertOnly:1: different content is 614 (original kept), identical content succeeds', async () => {
    expect((await put({ scope: `${BUCKET}:once.txt` }, 'once.txt', A)).status).toBe(200);
    const policy = { scope: `${BUCKET}:once.txt`, insertOnly: 1 };
    expectError(await put(policy, 'once.txt', B), 614, /file exists/);
    await expectStored(s, BUCKET, 'once.txt', A);
    expect(await put(policy, 'once.txt', A)).toEqual({ status: 200, data: { hash: qetag(A), key: 'once.txt' } });
    await expectStored(s, BUCKET, 'once.txt', A);
  });
});

describe('scope "bucket:prefix" with isPrefixalScope:1', () => {
  const policy = { scope: `${BUCKET}:pre/`, isPrefixalScope: 1 };

  it('accepts keys with the prefix', async () => {
    expect(await put(policy, 'pre/a.txt', A)).toEqual({ status: 200, data: { hash: qetag(A), key: 'pre/a.txt' } });
    expect((await put(policy, 'pre/', B)).status).toBe(200);
    await expectStored(s, BUCKET, 'pre/a.txt', A);
    await expectStored(s, BUCKET, 'pre/', B);
  });

  it('refuses other keys with 403', async () => {
    expectError(await put(policy, 'prefix-less.txt', A), 403, /key doesn't match with scope/);
    expectError(await put(policy, 'pr', A), 403, /key doesn't match with scope/);
    await expectAbsent(s, BUCKET, 'prefix-less.txt');
  });

  it('does not overwrite: an existing key with different content is 614, the original is kept', async () => {
    expect((await put(policy, 'pre/kept.txt', A)).status).toBe(200);
    expectError(await put(policy, 'pre/kept.txt', B), 614, /file exists/);
    await expectStored(s, BUCKET, 'pre/kept.txt', A);
  });
});

describe('key resolution', () => {
  it('without a key the object is stored under its etag (putWithoutKey)', async () => {
    const content = Buffer.from('stored under my own hash');
    const r = await put({ scope: BUCKET }, null, content);
    expect(r).toEqual({ status: 200, data: { hash: qetag(content), key: qetag(content) } });
    await expectStored(s, BUCKET, qetag(content), content);
  });

  it('saveKey names an upload without a key', async () => {
    const content = Buffer.from('saved by saveKey');
    const extra = new qiniu.form_up.PutExtra('pic.jpg', { 'x:user': 'alice' });
    const r = await put({ scope: BUCKET, saveKey: 'users/$(x:user)/$(etag)$(ext)' }, null, content, extra);
    const key = `users/alice/${qetag(content)}.jpg`;
    expect(r).toEqual({ status: 200, data: { hash: qetag(content), key, 'x:user': 'alice' } });
    await expectStored(s, BUCKET, key, content);
  });

  it('the client key wins over saveKey unless forceSaveKey is set', async () => {
    const content = Buffer.from('client key vs saveKey');
    const r = await put({ scope: BUCKET, saveKey: 'saved/$(fname)' }, 'client.txt', content);
    expect(r.data.key).toBe('client.txt');
    await expectStored(s, BUCKET, 'client.txt', content);
    await expectAbsent(s, BUCKET, 'saved/client.txt');
  });

  it('forceSaveKey ignores the client key', async () => {
    const content = Buffer.from('forced');
    const extra = new qiniu.form_up.PutExtra('orig.txt');
    const r = await put({ scope: BUCKET, saveKey: 'forced/$(fname)', forceSaveKey: true }, 'ignored.txt', content, extra);
    expect(r).toEqual({ status: 200, data: { hash: qetag(content), key: 'forced/orig.txt' } });
    await expectStored(s, BUCKET, 'forced/orig.txt', content);
    await expectAbsent(s, BUCKET, 'ignored.txt');
  });

  it('a forced saveKey is still checked against the scope', async () => {
    const policy = { scope: `${BUCKET}:only/`, isPrefixalScope: 1, saveKey: 'elsewhere/$(fname)', forceSaveKey: true };
    expectError(await put(policy, 'only/x.txt', A, new qiniu.form_up.PutExtra('x.txt')), 403, /key doesn't match with scope/);
    await expectAbsent(s, BUCKET, 'elsewhere/x.txt');
  });

  it('the empty string is a real key', async () => {
    const content = Buffer.from('empty key');
    expect(await put({ scope: BUCKET }, '', content)).toEqual({ status: 200, data: { hash: qetag(content), key: '' } });
  });
});

describe('keylimit and key length', () => {
  it('keylimit allows listed keys and refuses others with 403', async () => {
    const policy = { scope: BUCKET, keylimit: ['allowed-1.txt', 'allowed-2.txt'] };
    expect((await put(policy, 'allowed-2.txt', A)).status).toBe(200);
    expectError(await put(policy, 'not-listed.txt', A), 403, /keylimit/);
    await expectStored(s, BUCKET, 'allowed-2.txt', A);
    await expectAbsent(s, BUCKET, 'not-listed.txt');
  });

  it('a key of 750 bytes is accepted, 751 bytes is 400 (bytes of UTF-8, not characters)', async () => {
    const ok = '中'.repeat(250); // 750 bytes
    expect((await put({ scope: BUCKET }, ok, A)).status).toBe(200);
    await expectStored(s, BUCKET, ok, A);
    expectError(await put({ scope: BUCKET }, `${ok}x`, A), 400, /key too long/);
    expectError(await put({ scope: BUCKET }, 'k'.repeat(751), A), 400, /key too long/);
  });
});

describe('bucket of the scope', () => {
  it('a bucket that does not exist is 631', async () => {
    expectError(await put({ scope: 'no-such-bucket' }, 'x.txt', A), 631, /no such bucket/);
  });
});
