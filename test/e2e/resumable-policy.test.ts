/**
 * The put policy at mkfile (v1) and complete (v2) applies exactly as in form upload (docs/development/kodo-protocol.md §3.1, §5.4, §6.3):
 * insert semantics of a bare-bucket scope and of insertOnly (614 on different content, 200 on identical), the
 * key/scope check (403), fsizeLimit (413), a deadline that passed while the upload was staged (401; the staged
 * pieces stay usable with a fresh token), and the upload callback (the application's JSON is relayed).
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackApp, type CallbackApp } from '../helpers/callback-app.js';
import { qetag } from '../helpers/etag.js';
import { seededBytes } from '../helpers/files.js';
import { RawUp, ok, type PartJson } from '../helpers/resumable.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectError, expectStored, type RawAnswer } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'resumable-policy';
const EXISTING = seededBytes('existing', 1000);

let s: TestServer;
let app: CallbackApp;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
  await createBucket(s, BUCKET);
  app = await startCallbackApp();
  app.on('/cb', (req) => ({ status: 200, json: { fromApp: true, got: req.body } }));
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  for (const key of ['taken-v1', 'taken-v2', 'insert-only-v1', 'insert-only-v2']) {
    const r = await sdk(up.put(s.uploadToken({ scope: `${BUCKET}:${key}` }), key, EXISTING, new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
  }
});
afterAll(async () => {
  await app?.close();
  await s?.stop();
});

/** A staged upload: everything sent but the final mkfile/complete, which `finish` sends (optionally with another token). */
interface Staged {
  finish(token?: string): Promise<RawAnswer>;
}

type Version = 'v1' | 'v2';

/** Stages `content` for `key` with `token` the `version` way (4 MiB blocks/parts). */
async function stage(version: Version, token: string, key: string, content: Buffer): Promise<Staged> {
  const up = new RawUp(s.url, token);
  const pieces: Buffer[] = [];
  for (let off = 0; off < content.length; off += 4 * MiB) pieces.push(content.subarray(off, off + 4 * MiB));
  if (version === 'v1') {
    const ctxs: string[] = [];
    for (const p of pieces) ctxs.push(await up.block(p, MiB));
    return { finish: (t = token) => up.as(t).mkfile(content.length, ctxs, { key, 'x:who': 'v1' }) };
  }
  const id = ok<{ uploadId: string }>(await up.init(BUCKET, key)).uploadId;
  const parts: Array<{ partNumber: number; etag: string }> = [];
  for (const [i, p] of pieces.entries()) parts.push({ partNumber: i + 1, etag: ok<PartJson>(await up.part(BUCKET, key, id, i + 1, p)).etag });
  return { finish: (t = token) => up.as(t).complete(BUCKET, key, id, { parts, customVars: { 'x:who': 'v2' } }) };
}

async function upload(version: Version, policy: Record<string, unknown>, key: string, content: Buffer): Promise<RawAnswer> {
  return (await stage(version, s.uploadToken(policy), key, content)).finish();
}

describe.each<Version>(['v1', 'v2'])('%s', (version) => {
  it('scope "bucket" has insert semantics: different content on an existing key → 614 (old kept), identical → 200', async () => {
    const key = `taken-${version}`;
    expectError(await upload(version, { scope: BUCKET }, key, seededBytes('different', 5 * MiB)), 614);
    await expectStored(s, BUCKET, key, EXISTING);
    expect(ok(await upload(version, { scope: BUCKET }, key, EXISTING))).toEqual({ key, hash: qetag(EXISTING), 'x:who': version });
  });

  it('insertOnly: 1 refuses to overwrite (614); scope "bucket:key" without it overwrites', async () => {
    const key = `insert-only-${version}`;
    const next = seededBytes(`overwrite-${version}`, 4 * MiB + 5);
    expectError(await upload(version, { scope: `${BUCKET}:${key}`, insertOnly: 1 }, key, next), 614);
    await expectStored(s, BUCKET, key, EXISTING);
    ok(await upload(version, { scope: `${BUCKET}:${key}` }, key, next));
    await expectStored(s, BUCKET, key, next);
  });

  it('a key outside the scope is refused (403)', async () => {
    expectError(await upload(version, { scope: `${BUCKET}:allowed-${version}` }, `other-${version}`, Buffer.from('x')), 403);
    await expectAbsent(s, BUCKET, `other-${version}`);
  });

  it('fsizeLimit counts the whole file: one byte over → 413, nothing stored; exactly the limit → 200', async () => {
    const key = `limited-${version}`;
    const content = seededBytes(`limit-${version}`, 6 * MiB);
    expectError(await upload(version, { scope: BUCKET, fsizeLimit: 6 * MiB - 1 }, key, content), 413);
    await expectAbsent(s, BUCKET, key);
    ok(await upload(version, { scope: BUCKET, fsizeLimit: 6 * MiB }, key, content));
    await expectStored(s, BUCKET, key, content);
  });

  it('a token whose deadline passed while staging is refused at the end (401); a fresh token finishes the same pieces', async () => {
    const key = `late-${version}`;
    const content = seededBytes(`late-${version}`, 5 * MiB);
    // deadline = the server's now + 60 s (the server clock may already run ahead of the wall clock)
    const expires = Math.ceil(s.clock.offsetMs / 1000) + 60;
    const staged = await stage(version, s.uploadToken({ scope: BUCKET, expires }), key, content);
    s.clock.advance(120);
    expectError(await staged.finish(), 401);
    await expectAbsent(s, BUCKET, key);
    ok(await staged.finish(s.uploadToken({ scope: BUCKET })));
    await expectStored(s, BUCKET, key, content);
  });

  it('callbackUrl: the rendered callbackBody goes to the application and its JSON comes back', async () => {
    const key = `called-back-${version}`;
    const content = seededBytes(`cb-${version}`, 4 * MiB + 3);
    const before = app.requests.length;
    const r = await upload(
      version,
      { scope: BUCKET, callbackUrl: `${app.base}/cb`, callbackBody: 'key=$(key)&hash=$(etag)&size=$(fsize)&who=$(x:who)' },
      key,
      content,
    );
    const got = `key=${key}&hash=${qetag(content)}&size=${content.length}&who=${version}`;
    expect(ok(r)).toEqual({ fromApp: true, got });
    expect(app.requests.slice(before).map((q) => q.body)).toEqual([got]);
    await expectStored(s, BUCKET, key, content);
  });
});
