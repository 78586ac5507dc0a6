/**
 * rs attribute operations through the official SDK (docs/development/kodo-protocol.md §8.1, §13.2): chgm (MIME, x-qn-meta, cond),
 * changeHeaders, chtype, chstatus, deleteAfterDays, lifecycle and restoreAr. Lifetimes are checked by moving the
 * server clock (no sleeps); SDK calls then use a Mac without X-Qiniu-Date so the signature window does not apply.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b64, entry, expectJsonError, put, rawOp } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectAbsent, expectStored } from '../helpers/upload.js';

let s: TestServer;
const BUCKET = 'rs-attrs';
const BODY = Buffer.from('attribute test body');
/** Upload tokens that stay valid after the clock moves forward. */
const LONG = { expires: 365 * 86400 };

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
});
afterAll(async () => s?.stop());

type Stat = Record<string, unknown>;
const configs: Array<[string, () => qiniu.conf.Config]> = [
  ['static Zone', () => s.zoneConfig()],
  ['discovery', () => s.discoveryConfig()],
];

describe.each(configs)('chgm, chtype, chstatus (%s)', (name, config) => {
  const tag = name === 'discovery' ? 'd' : 'z';
  const bm = (): qiniu.rs.BucketManager => s.bucketManager(config());
  const stat = async (key: string): Promise<Stat> => {
    const r = await sdk<Stat>(bm().stat(BUCKET, key));
    expect(r.status).toBe(200);
    return r.data;
  };

  it('changeMime: stat and the download show the new Content-Type', async () => {
    const key = `${tag}/mime`;
    await put(s, BUCKET, key, BODY, { mimeType: 'text/plain' });
    expect((await sdk(bm().changeMime(BUCKET, key, 'application/x-granary'))).status).toBe(200);
    expect((await stat(key)).mimeType).toBe('application/x-granary');
    const d = await expectStored(s, BUCKET, key, BODY);
    expect(d.headers.get('content-type')).toBe('application/x-granary');
    expect((await sdk(bm().changeMime(BUCKET, `${tag}/missing`, 'text/plain'))).status).toBe(612);
  });

  it("changeHeaders {'Content-Type'} overrides the response header and shows as x-qn-meta '!Content-Type'", async () => {
    const key = `${tag}/headers`;
    await put(s, BUCKET, key, BODY, { mimeType: 'text/plain' });
    expect((await sdk(bm().changeHeaders(BUCKET, key, { 'Content-Type': 'text/html; charset=utf-8' }))).status).toBe(200);
    const st = await stat(key);
    expect(st['x-qn-meta']).toEqual({ '!Content-Type': 'text/html; charset=utf-8' });
    expect(st.mimeType).toBe('text/plain');
    const d = await expectStored(s, BUCKET, key, BODY);
    expect(d.headers.get('content-type')).toBe('text/html; charset=utf-8');
  });

  it('chgm x-qn-meta-<name> sets metadata (X-Qn-Meta-* on download, unprefixed in stat); an empty value deletes it', async () => {
    const key = `${tag}/meta`;
    await put(s, BUCKET, key, BODY, { meta: { keep: 'yes' } });
    const set = await rawOp(s, `/chgm/${entry(BUCKET, key)}/x-qn-meta-color/${b64('blue')}`);
    expect(set.status, set.text).toBe(200);
    expect((await stat(key))['x-qn-meta']).toEqual({ keep: 'yes', color: 'blue' });
    const d = await expectStored(s, BUCKET, key, BODY);
    expect(d.headers.get('x-qn-meta-color')).toBe('blue');
    expect(d.headers.get('x-qn-meta-keep')).toBe('yes');

    const del = await rawOp(s, `/chgm/${entry(BUCKET, key)}/x-qn-meta-color/`);
    expect(del.status, del.text).toBe(200);
    expect((await stat(key))['x-qn-meta']).toEqual({ keep: 'yes' });
    expect((await download(s, BUCKET, key)).headers.get('x-qn-meta-color')).toBeNull();
  });

  it('chgm with a cond: a mismatch is 613 (Kodo\'s answer for chgm) and changes nothing; a match applies (200)', async () => {
    const key = `${tag}/cond`;
    const { hash } = await put(s, BUCKET, key, BODY, { mimeType: 'text/plain' });
    const raw = await rawOp(s, `/stat/${entry(BUCKET, key)}`, { method: 'GET' });
    const putTime = /"putTime":(\d+)/.exec(raw.text)?.[1] as string;
    const before = await stat(key);

    const wrong = `/chgm/${entry(BUCKET, key)}/mime/${b64('image/png')}/x-qn-meta-c/${b64('1')}/cond/${b64(`hash=${hash}&fsize=1`)}`;
    expectJsonError(await rawOp(s, wrong), 613);
    expect(await stat(key)).toEqual(before);

    const cond = b64(`hash=${hash}&mime=text/plain&fsize=${BODY.length}&putTime=${putTime}`);
    const right = await rawOp(s, `/chgm/${entry(BUCKET, key)}/mime/${b64('image/png')}/x-qn-meta-c/${b64('1')}/cond/${cond}`);
    expect(right.status, right.text).toBe(200);
    expect(await stat(key)).toMatchObject({ mimeType: 'image/png', 'x-qn-meta': { c: '1' } });
  });

  it('chtype 1 → stat type 1; chtype 9 → 400 and the type stays', async () => {
    const key = `${tag}/type`;
    await put(s, BUCKET, key, BODY);
    expect((await sdk(bm().changeType(BUCKET, key, 1))).status).toBe(200);
    expect((await stat(key)).type).toBe(1);
    expect((await sdk(bm().changeType(BUCKET, key, 9))).status).toBe(400);
    expect((await stat(key)).type).toBe(1);
  });

  it('chstatus 1 → stat status 1 and download 403; chstatus 0 → no status, download 200', async () => {
    const key = `${tag}/status`;
    await put(s, BUCKET, key, BODY);
    expect((await sdk(bm().updateObjectStatus(BUCKET, key, 1))).status).toBe(200);
    expect((await stat(key)).status).toBe(1);
    expect((await download(s, BUCKET, key)).status).toBe(403);
    expect((await sdk(bm().updateObjectStatus(BUCKET, key, 0))).status).toBe(200);
    expect(await stat(key)).not.toHaveProperty('status');
    await expectStored(s, BUCKET, key, BODY);
    expect((await sdk(bm().updateObjectStatus(BUCKET, key, 2))).status).toBe(400);
  });
});

describe('restoreAr', () => {
  it('is 400 on a standard object; after chtype 2 it is 200 and stat shows restoreStatus 2', async () => {
    const bm = s.bucketManager();
    await put(s, BUCKET, 'archive', BODY);
    expect((await sdk(bm.restoreAr(`${BUCKET}:archive`, 1))).status).toBe(400);
    expect((await sdk<Stat>(bm.stat(BUCKET, 'archive'))).data).not.toHaveProperty('restoreStatus');
    expect((await sdk(bm.changeType(BUCKET, 'archive', 2))).status).toBe(200);
    expect((await sdk(bm.restoreAr(`${BUCKET}:archive`, 8))).status).toBe(400);
    expect((await sdk(bm.restoreAr(`${BUCKET}:archive`, 1))).status).toBe(200);
    expect((await sdk<Stat>(bm.stat(BUCKET, 'archive'))).data).toMatchObject({ type: 2, restoreStatus: 2 });
    expect((await sdk(bm.restoreAr(`${BUCKET}:gone`, 1))).status).toBe(612);
  });

  it('an Archive / Deep Archive object is refused (403) to downloads and fops until restored; the restore lapses', async () => {
    // Signed without X-Qiniu-Date: the clock moves below.
    const bm = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(AK, SK, { disableQiniuTimestampSignature: true }), s.zoneConfig());
    for (const type of [2, 3] as const) {
      const key = `frozen-${type}`;
      await put(s, BUCKET, key, BODY, { policy: LONG });
      expect((await sdk(bm.changeType(BUCKET, key, type))).status).toBe(200);
      const refused = await download(s, BUCKET, key);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body.toString()).error).toMatch(/archive.*restoreAr/);
      expect((await fetch(`${s.url}/${BUCKET}/${key}?imageInfo`)).status).toBe(403);
      expect((await sdk(bm.restoreAr(`${BUCKET}:${key}`, 2))).status).toBe(200);
      await expectStored(s, BUCKET, key, BODY);
    }
    s.clock.advance(3 * 86400); // past freezeAfterDays 2: frozen again
    for (const key of ['frozen-2', 'frozen-3']) {
      expect((await download(s, BUCKET, key)).status).toBe(403);
      expect((await sdk<Stat>(bm.stat(BUCKET, key))).data).not.toHaveProperty('restoreStatus');
    }
    expect((await sdk(bm.restoreAr(`${BUCKET}:frozen-2`, 1))).status).toBe(200);
    await expectStored(s, BUCKET, 'frozen-2', BODY);
    s.clock.advance(-3 * 86400);
  });

  it('Archive IR (4) and IA (1) read directly', async () => {
    for (const type of [1, 4]) {
      await put(s, BUCKET, `direct-${type}`, BODY);
      expect((await sdk(s.bucketManager().changeType(BUCKET, `direct-${type}`, type))).status).toBe(200);
      await expectStored(s, BUCKET, `direct-${type}`, BODY);
    }
  });
});

describe('lifetimes (server clock moved, no sleep)', () => {
  // X-Qiniu-Date would be stale once the server clock moves; sign without it.
  const bm = (): qiniu.rs.BucketManager =>
    new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(AK, SK, { disableQiniuTimestampSignature: true }), s.zoneConfig());
  const nowSec = (): number => Math.floor(s.clock.nowMs() / 1000);

  it('deleteAfterDays 1 → stat has expiration; 3 days later stat 612 and download 404', async () => {
    await put(s, BUCKET, 'life/expiring', BODY, { policy: LONG });
    await put(s, BUCKET, 'life/cancelled', BODY, { policy: LONG });
    await put(s, BUCKET, 'life/plain', BODY, { policy: LONG });
    const t0 = nowSec();
    expect((await sdk(bm().deleteAfterDays(BUCKET, 'life/expiring', 1))).status).toBe(200);
    const st = await sdk<Stat>(bm().stat(BUCKET, 'life/expiring'));
    expect(st.data.expiration).toEqual(expect.any(Number));
    expect(st.data.expiration as number).toBeGreaterThan(t0 + 86400);
    expect(st.data.expiration as number).toBeLessThanOrEqual(t0 + 2 * 86400);

    expect((await sdk(bm().deleteAfterDays(BUCKET, 'life/cancelled', 1))).status).toBe(200);
    expect((await sdk(bm().deleteAfterDays(BUCKET, 'life/cancelled', 0))).status).toBe(200);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/cancelled'))).data).not.toHaveProperty('expiration');

    s.clock.advance(3 * 86400);
    expect((await sdk(bm().stat(BUCKET, 'life/expiring'))).status).toBe(612);
    await expectAbsent(s, BUCKET, 'life/expiring');
    expect((await sdk(bm().deleteAfterDays(BUCKET, 'life/expiring', 0))).status).toBe(612);
    await expectStored(s, BUCKET, 'life/cancelled', BODY);
    await expectStored(s, BUCKET, 'life/plain', BODY);
  });

  it('lifecycle toIAAfterDays → stat shows transitionToIA, and after it passes type is 1; -1 cancels', async () => {
    await put(s, BUCKET, 'life/ia', BODY, { policy: LONG });
    await put(s, BUCKET, 'life/ia-cancelled', BODY, { policy: LONG });
    const t0 = nowSec();
    expect((await sdk(bm().setObjectLifeCycle(BUCKET, 'life/ia', { toIaAfterDays: 1 }))).status).toBe(200);
    const st = await sdk<Stat>(bm().stat(BUCKET, 'life/ia'));
    expect(st.data).toMatchObject({ type: 0, transitionToIA: expect.any(Number) });
    expect(st.data.transitionToIA as number).toBeGreaterThan(t0 + 86400);
    expect(st.data).not.toHaveProperty('expiration');

    expect((await sdk(bm().setObjectLifeCycle(BUCKET, 'life/ia-cancelled', { toIaAfterDays: 1, deleteAfterDays: 5 }))).status).toBe(200);
    // 0 leaves a field unchanged, -1 cancels it.
    expect((await sdk(bm().setObjectLifeCycle(BUCKET, 'life/ia-cancelled', { toIaAfterDays: -1 }))).status).toBe(200);
    const cancelled = await sdk<Stat>(bm().stat(BUCKET, 'life/ia-cancelled'));
    expect(cancelled.data).not.toHaveProperty('transitionToIA');
    expect(cancelled.data.expiration).toEqual(expect.any(Number));

    s.clock.advance(3 * 86400);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/ia'))).data.type).toBe(1);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/ia-cancelled'))).data.type).toBe(0);
  });

  it('a storage class reached by a lifecycle transition sticks: chtype afterwards wins, cancelling keeps it', async () => {
    await put(s, BUCKET, 'life/settled', BODY, { policy: LONG });
    await put(s, BUCKET, 'life/settled-2', BODY, { policy: LONG });
    for (const key of ['life/settled', 'life/settled-2']) {
      expect((await sdk(bm().setObjectLifeCycle(BUCKET, key, { toIaAfterDays: 1 }))).status).toBe(200);
    }
    s.clock.advance(3 * 86400);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/settled'))).data.type).toBe(1);
    expect((await sdk(bm().changeType(BUCKET, 'life/settled', 0))).status).toBe(200);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/settled'))).data.type).toBe(0);
    // Cancelling a transition that already happened does not undo it.
    expect((await sdk(bm().setObjectLifeCycle(BUCKET, 'life/settled-2', { toIaAfterDays: -1 }))).status).toBe(200);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/settled-2'))).data.type).toBe(1);
  });

  it('lifecycle with a non-matching cond is 608 and schedules nothing', async () => {
    await put(s, BUCKET, 'life/cond', BODY, { policy: LONG });
    const r = await sdk(bm().setObjectLifeCycle(BUCKET, 'life/cond', { deleteAfterDays: 1, cond: { hash: 'not-the-hash' } }));
    expect(r.status).toBe(608);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/cond'))).data).not.toHaveProperty('expiration');
    const st = await sdk<{ hash: string }>(bm().stat(BUCKET, 'life/cond'));
    const ok = await sdk(bm().setObjectLifeCycle(BUCKET, 'life/cond', { deleteAfterDays: 1, cond: { hash: st.data.hash } }));
    expect(ok.status).toBe(200);
    expect((await sdk<Stat>(bm().stat(BUCKET, 'life/cond'))).data.expiration).toEqual(expect.any(Number));
  });
});
