/**
 * Bucket event notifications (docs/development/kodo-protocol.md §8.6 `events/*`; Kodo's model and body from
 * developer.qiniu.com/kodo/8610/dev-event-notification): rules set, changed, read and deleted with the official
 * SDK (putBucketEvent, updateBucketEvent, getBucketEvent, deleteBucketEvent); a local application server receives
 * put, mkfile (v1 and v2), copy, move, disable, enable and delete events of matching keys and no others, each
 * signed so `qiniu.util.isQiniuCallback` verifies it (with the rule's key pair, default the bucket owner's);
 * retries after a 500 (same bytes, same id) and fail-over to the next URL; a private callback URL refused by the
 * outbound guard ends the event failed; bad input (631, 403, 400s, 612); a `granary serve` process SIGKILLed while
 * an acknowledged upload's event is being delivered delivers it after the restart; the CLI.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildCli } from '../../src/cli.js';
import { isKodoError } from '../../src/errors.js';
import type { OutboxEvent } from '../../src/ports/events.js';
import { startCallbackApp, type AppRequest, type CallbackApp } from '../helpers/callback-app.js';
import { qetag } from '../helpers/etag.js';
import { AK, sdk, SK, startTestServer, staticZoneConfig, type TestServer } from '../helpers/server.js';
import { freePort, spawnServer } from '../helpers/subprocess.js';
import { createBucket, waitUntil } from '../helpers/upload.js';

let s: TestServer;
let app: CallbackApp;
let alice: qiniu.auth.digest.Mac;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32', GRANARY_EVENT_RETRY_MS: '20', GRANARY_CALLBACK_TIMEOUT: '2' });
  app = await startCallbackApp();
  for (const path of ['/events', '/png', '/flaky', '/second', '/signed', '/alice', '/hold']) {
    app.on(path, () => ({ status: 200, json: {} }));
  }
  let flaky = 0;
  app.on('/flaky', () => (++flaky === 1 ? { status: 500, json: { error: 'try later' } } : { status: 200, json: {} }));
  app.on('/down', () => ({ status: 503, json: { error: 'down' } }));
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
});
afterAll(async () => {
  await app?.close();
  await s?.stop();
});

/** The Kodo message inside a notification body, and the raw message text (for exact big integers). */
interface Message {
  event: string;
  bucket: string;
  key: string;
  fsize: number;
  hash: string;
  ftype: number;
  mimetype: string;
  rule: string;
  id: string;
  reqid?: string;
  access_key?: string;
  dest_bucket?: string;
  dest_key?: string;
}
function messageOf(req: AppRequest): { outer: Record<string, unknown>; message: Message; text: string } {
  const outer = JSON.parse(req.body) as Record<string, unknown>;
  const text = outer.Message as string;
  return { outer, message: JSON.parse(text) as Message, text };
}

function expectSigned(req: AppRequest, mac = s.mac): void {
  const auth = String(req.headers.authorization);
  expect(auth).toMatch(/^QBox /);
  expect(req.headers['content-type']).toBe('application/json');
  expect(qiniu.util.isQiniuCallback(mac, `${app.base}${req.url}`, req.body, auth)).toBe(true);
  expect(qiniu.util.isQiniuCallback(mac, `${app.base}${req.url}`, `${req.body} `, auth)).toBe(false);
}

async function formPut(bucket: string, key: string, content: Buffer, mac = s.mac): Promise<{ reqId: string }> {
  const token = new qiniu.rs.PutPolicy({ scope: `${bucket}:${key}` } as qiniu.rs.PutPolicyOptions).uploadToken(mac);
  const { resp } = await new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, content, new qiniu.form_up.PutExtra());
  expect(resp.statusCode).toBe(200);
  return { reqId: String(resp.headers['x-reqid']) };
}

async function resumablePut(bucket: string, key: string, content: Buffer, version: 'v1' | 'v2'): Promise<void> {
  const token = s.uploadToken({ scope: `${bucket}:${key}` });
  const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, version);
  const up = new qiniu.resume_up.ResumeUploader(s.zoneConfig());
  const r = await sdk(up.putStream(token, key, Readable.from([content]), content.length, extra));
  expect(r.status, JSON.stringify(r.data)).toBe(200);
}

/** Outbox events of the in-process server (newest first). */
const outbox = (server = s): Promise<OutboxEvent[]> => server.running.g.meta.events.recent(1000);

/** Waits until no event of `server` waits or runs. */
async function settled(server = s): Promise<OutboxEvent[]> {
  await waitUntil(async () => (await outbox(server)).every((e) => e.state === 'done' || e.state === 'failed'), 'the outbox settled', 15_000);
  return outbox(server);
}

describe('rules through the SDK', () => {
  const B = 'ev-rules';
  beforeAll(() => createBucket(s, B));

  it('adds, reads, updates and deletes a rule in Kodo’s shapes', async () => {
    const bm = s.bucketManager();
    const added = await sdk(
      bm.putBucketEvent(B, {
        name: 'r_1',
        event: ['put', 'delete'],
        callbackURL: [`${app.base}/a`, `${app.base}/b`],
        prefix: 'p/',
        suffix: '.txt',
      }),
    );
    expect(added.status, JSON.stringify(added.data)).toBe(200);
    const got = await sdk<Array<Record<string, unknown>>>(bm.getBucketEvent(B));
    expect(got.status).toBe(200);
    expect(got.data).toEqual([
      {
        name: 'r_1',
        prefix: 'p/',
        suffix: '.txt',
        events: ['put', 'delete'],
        callback_urls: [`${app.base}/a`, `${app.base}/b`],
        access_key: '',
        host: '',
        ctime: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);

    expect((await sdk(bm.updateBucketEvent(B, { name: 'r_1', event: 'copy', host: 'app.internal' }))).status).toBe(200);
    const updated = await sdk<Array<Record<string, unknown>>>(bm.getBucketEvent(B));
    expect(updated.data[0]).toMatchObject({ name: 'r_1', prefix: 'p/', suffix: '.txt', events: ['copy'], host: 'app.internal' });
    expect(updated.data[0]?.callback_urls).toHaveLength(2);

    expect((await sdk(bm.putBucketEvent(B, { name: 'r_2', event: 'mkfile', callbackURL: `${app.base}/c` }))).status).toBe(200);
    expect((await sdk(bm.deleteBucketEvent(B, 'r_1'))).status).toBe(200);
    const after = await sdk<Array<{ name: string; prefix: string }>>(bm.getBucketEvent(B));
    expect(after.data.map((r) => [r.name, r.prefix])).toEqual([['r_2', '']]);
    expect((await sdk(bm.deleteBucketEvent(B, 'r_2'))).status).toBe(200);
    expect((await sdk(bm.getBucketEvent(B))).data).toEqual([]);
  });
});

describe('deliveries', () => {
  const B = 'ev-deliver';
  beforeAll(async () => {
    await createBucket(s, B);
    const bm = s.bucketManager();
    const events = ['put', 'mkfile', 'copy', 'move', 'delete', 'disable', 'enable'] as const;
    expect(
      (await sdk(bm.putBucketEvent(B, { name: 'jpgs', event: [...events], callbackURL: `${app.base}/events`, prefix: 'photos/', suffix: '.jpg' })))
        .status,
    ).toBe(200);
    expect((await sdk(bm.putBucketEvent(B, { name: 'pngs', event: 'put', callbackURL: `${app.base}/png`, suffix: '.png' }))).status).toBe(200);
  });

  it('POSTs put, mkfile, copy, move, disable, enable and delete of matching keys, signed, and nothing else', async () => {
    const before = (await outbox()).length;
    const bm = s.bucketManager();
    const content = Buffer.from('a cat picture');
    const { reqId } = await formPut(B, 'photos/a.jpg', content);
    await formPut(B, 'photos/a.png', Buffer.from('png')); // the other rule
    await formPut(B, 'other/b.jpg', Buffer.from('not under photos/'));
    await resumablePut(B, 'photos/r1.jpg', Buffer.alloc(1000, 1), 'v1');
    await resumablePut(B, 'photos/r2.jpg', Buffer.alloc(2000, 2), 'v2');
    expect((await sdk(bm.copy(B, 'photos/a.jpg', B, 'photos/c.jpg', null))).status).toBe(200);
    expect((await sdk(bm.copy(B, 'photos/a.jpg', B, 'other/x.jpg', null))).status).toBe(200); // the source matches
    expect((await sdk(bm.move(B, 'photos/c.jpg', B, 'photos/d.jpg', null))).status).toBe(200);
    expect((await sdk(bm.updateObjectStatus(B, 'photos/d.jpg', 1))).status).toBe(200);
    expect((await sdk(bm.updateObjectStatus(B, 'photos/d.jpg', 0))).status).toBe(200);
    expect((await sdk(bm.changeType(B, 'photos/d.jpg', 1))).status).toBe(200); // no event for chtype
    expect((await sdk(bm.changeMime(B, 'photos/d.jpg', 'image/png'))).status).toBe(200); // nor chgm
    expect((await sdk(bm.delete(B, 'photos/d.jpg'))).status).toBe(200);
    expect((await sdk(bm.delete(B, 'photos/nope.jpg'))).status).toBe(612); // nothing deleted, no event
    const batch = await sdk(bm.batch([qiniu.rs.deleteOp(B, 'other/b.jpg'), qiniu.rs.deleteOp(B, 'other/x.jpg')]));
    expect(batch.status).toBe(200);

    const got = await app.received('/events', 9);
    const png = await app.received('/png', 1);
    const all = await settled();
    // Exactly ten events were written, all delivered on the first attempt.
    expect(all.length - before).toBe(10);
    expect(all.slice(0, 10).every((e) => e.state === 'done' && e.attempts === 1)).toBe(true);
    expect(got).toHaveLength(9);
    expect(png).toHaveLength(1);

    for (const req of [...got, ...png]) expectSigned(req);
    const seen = got.map((r) => messageOf(r).message).map((m) => `${m.event} ${m.key}${m.dest_key ? ` -> ${m.dest_key}` : ''}`);
    expect(seen.sort()).toEqual(
      [
        'put photos/a.jpg',
        'mkfile photos/r1.jpg',
        'mkfile photos/r2.jpg',
        'copy photos/a.jpg -> photos/c.jpg',
        'copy photos/a.jpg -> other/x.jpg',
        'move photos/c.jpg -> photos/d.jpg',
        'disable photos/d.jpg',
        'enable photos/d.jpg',
        'delete photos/d.jpg',
      ].sort(),
    );
    expect(messageOf(png[0] as AppRequest).message).toMatchObject({ event: 'put', key: 'photos/a.png', rule: 'pngs' });

    // The put: Kodo's envelope and fields.
    const put = got.map(messageOf).find((m) => m.message.event === 'put');
    expect(put?.outer.Subject).toBe('Qiniu KODO Notification');
    expect(put?.outer.Timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00$/);
    expect(put?.message).toMatchObject({
      bucket: B,
      key: 'photos/a.jpg',
      fsize: content.length,
      hash: qetag(content),
      ftype: 0,
      mimetype: 'image/jpeg',
      rule: 'jpgs',
      reqid: reqId,
      access_key: AK,
      id: expect.stringMatching(/^[\w-]{16}$/),
    });
    const time = BigInt(/"time":(\d+)/.exec(put?.text ?? '')?.[1] ?? '0');
    expect(Number(time / 1_000_000n)).toBeGreaterThan(Date.now() - 60_000);
    expect(put?.text).toMatch(/"putTime":\d{17},/);
    // copy and move name both entries; delete carries the deleted entry's attributes.
    const move = got.map((r) => messageOf(r).message).find((m) => m.event === 'move');
    expect(move).toMatchObject({ bucket: B, key: 'photos/c.jpg', dest_bucket: B, dest_key: 'photos/d.jpg', hash: qetag(content) });
    const del = got.map((r) => messageOf(r).message).find((m) => m.event === 'delete');
    expect(del).toMatchObject({ key: 'photos/d.jpg', fsize: content.length, hash: qetag(content), ftype: 1, mimetype: 'image/png' });
    const ids = got.map((r) => messageOf(r).message.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('retries after a 500 with the same body until the application answers 200', async () => {
    const bm = s.bucketManager();
    expect((await sdk(bm.putBucketEvent(B, { name: 'flaky', event: 'put', callbackURL: `${app.base}/flaky`, prefix: 'retry/' }))).status).toBe(200);
    await formPut(B, 'retry/one.txt', Buffer.from('retry me'));
    const [first, second] = await app.received('/flaky', 2);
    expect(second?.body).toBe(first?.body);
    expectSigned(second as AppRequest);
    const id = messageOf(first as AppRequest).message.id;
    await waitUntil(async () => (await s.running.g.meta.events.get(id))?.state === 'done', 'the event is done');
    expect(await s.running.g.meta.events.get(id)).toMatchObject({ state: 'done', attempts: 2 });
  });

  it('tries the next callback URL when one fails, in one attempt', async () => {
    const bm = s.bucketManager();
    const urls = [`${app.base}/down`, `${app.base}/second`];
    expect((await sdk(bm.putBucketEvent(B, { name: 'failover', event: 'delete', callbackURL: urls, prefix: 'fo/' }))).status).toBe(200);
    await formPut(B, 'fo/k', Buffer.from('x'));
    expect((await sdk(bm.delete(B, 'fo/k'))).status).toBe(200);
    const [got] = await app.received('/second', 1);
    const id = messageOf(got as AppRequest).message.id;
    await waitUntil(async () => (await s.running.g.meta.events.get(id))?.state === 'done', 'the event is done');
    expect(await s.running.g.meta.events.get(id)).toMatchObject({ attempts: 1 });
    expect(app.requests.filter((r) => r.url === '/down')).toHaveLength(1);
  });

  it("signs with the rule's access_key pair, by default the bucket owner's", async () => {
    const aliceBucket = 'ev-alice';
    const am = new qiniu.rs.BucketManager(alice, s.zoneConfig());
    expect((await sdk(am.createBucket(aliceBucket, { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk(am.putBucketEvent(aliceBucket, { name: 'mine', event: 'put', callbackURL: `${app.base}/alice` }))).status).toBe(200);
    await formPut(aliceBucket, 'k', Buffer.from('alice'), alice);
    const [owned] = await app.received('/alice', 1);
    expectSigned(owned as AppRequest, alice);
    expect(messageOf(owned as AppRequest).message.access_key).toBe(alice.accessKey);

    // Root may name any key pair for a rule of its bucket.
    const bm = s.bucketManager();
    const r = await sdk(bm.putBucketEvent(B, { name: 'signed', event: 'put', callbackURL: `${app.base}/signed`, prefix: 'signed/', access_key: alice.accessKey }));
    expect(r.status).toBe(200);
    await formPut(B, 'signed/k', Buffer.from('by alice'));
    const [signed] = await app.received('/signed', 1);
    expectSigned(signed as AppRequest, alice);
    expect(qiniu.util.isQiniuCallback(s.mac, `${app.base}/signed`, signed?.body ?? '', String(signed?.headers.authorization))).toBe(false);
  });
});

describe('the outbound guard', () => {
  it('refuses a private callback URL without GRANARY_OUTBOUND_ALLOW: the event ends failed, the upload succeeded', async () => {
    const s2 = await startTestServer({ GRANARY_EVENT_RETRY_MS: '20' });
    try {
      await createBucket(s2, 'ev-guard');
      const bm = s2.bucketManager();
      expect((await sdk(bm.putBucketEvent('ev-guard', { name: 'private', event: 'put', callbackURL: `${app.base}/guarded` }))).status).toBe(200);
      const up = new qiniu.form_up.FormUploader(s2.zoneConfig());
      const r = await sdk(up.put(s2.uploadToken({ scope: 'ev-guard' }), 'k', Buffer.from('x'), new qiniu.form_up.PutExtra()));
      expect(r.status).toBe(200);
      const [ev] = await settled(s2);
      expect(ev).toMatchObject({ state: 'failed', attempts: 1, result: expect.stringMatching(/GRANARY_OUTBOUND_ALLOW/) });
      expect(app.requests.filter((q) => q.url === '/guarded')).toEqual([]);
      expect((await sdk(bm.stat('ev-guard', 'k'))).status).toBe(200);
    } finally {
      await s2.stop();
    }
  });
});

describe('bad input', () => {
  const B = 'ev-bad';
  beforeAll(async () => {
    await createBucket(s, B);
    expect((await sdk(s.bucketManager().putBucketEvent(B, { name: 'taken', event: 'put', callbackURL: `${app.base}/x` }))).status).toBe(200);
  });

  const add = (options: Record<string, unknown>, bucket = B, mac = s.mac) =>
    sdk<{ error: string }>(
      new qiniu.rs.BucketManager(mac, s.zoneConfig()).putBucketEvent(bucket, {
        name: 'r',
        event: 'put',
        callbackURL: `${app.base}/x`,
        ...options,
      } as Parameters<qiniu.rs.BucketManager['putBucketEvent']>[1]),
    );

  it('answers 631 for an unknown bucket and 403 for another account’s', async () => {
    expect((await add({}, 'ev-missing')).status).toBe(631);
    expect((await sdk(s.bucketManager().getBucketEvent('ev-missing'))).status).toBe(631);
    expect((await add({}, B, alice)).status).toBe(403);
    const am = new qiniu.rs.BucketManager(alice, s.zoneConfig());
    expect((await sdk(am.getBucketEvent(B))).status).toBe(403);
    expect((await sdk(am.deleteBucketEvent(B, 'taken'))).status).toBe(403);
  });

  it.each([
    [{ event: 'upload' }, /event: unknown event name "upload"/],
    [{ event: ['put', 'Put'] }, /event: unknown event name "Put"/],
    [{ event: '' }, /event is required/],
    [{ callbackURL: 'ftp://app.example/x' }, /callbackURL: not an absolute http\(s\) URL/],
    [{ callbackURL: 'not a url' }, /callbackURL/],
    [{ callbackURL: '' }, /callbackURL is required/],
    [{ name: 'bad name!' }, /name must be/],
    [{ name: '' }, /name is required/],
    [{ name: 'x'.repeat(50) }, /name must be/],
    [{ access_key: 'nobody' }, /access_key: unknown AccessKey/],
    [{ host: 'bad host/' }, /host: not a host name/],
    [{ name: 'taken' }, /event name exists/],
  ])('answers 400 for %j', async (options, message) => {
    const r = await add(options);
    expect(r.status, JSON.stringify(r.data)).toBe(400);
    expect(r.data.error).toMatch(message);
  });

  it('answers 400 to update (as Kodo) and 612 to delete an unknown rule, 403 for another account’s access_key, and changes nothing', async () => {
    const bm = s.bucketManager();
    expect((await sdk(bm.updateBucketEvent(B, { name: 'nope', event: 'put' }))).status).toBe(400);
    expect((await sdk(bm.deleteBucketEvent(B, 'nope'))).status).toBe(612);
    const bad = await sdk<{ error: string }>(bm.updateBucketEvent(B, { name: 'taken', event: 'upload' as 'put' }));
    expect(bad.status).toBe(400);
    const am = new qiniu.rs.BucketManager(alice, s.zoneConfig());
    expect((await sdk(am.createBucket('ev-bad-alice', { regionId: 'z0' }))).status).toBe(200);
    const theirs = await add({ access_key: AK }, 'ev-bad-alice', alice);
    expect(theirs.status).toBe(403);
    expect(theirs.data.error).toMatch(/access_key/);
    const rules = await sdk<Array<{ name: string; events: string[] }>>(bm.getBucketEvent(B));
    expect(rules.data.map((r) => [r.name, r.events])).toEqual([['taken', ['put']]]);
  });
});

describe('crash', () => {
  let dataDir = '';
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers after a restart the event of an upload acknowledged before a SIGKILL', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-events-crash-'));
    const env = {
      GRANARY_DATA_DIR: dataDir,
      GRANARY_ACCESS_KEY: AK,
      GRANARY_SECRET_KEY: SK,
      GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32',
      GRANARY_CALLBACK_TIMEOUT: '120',
    };
    let holds = 0;
    app.on('/hold', () => (++holds === 1 ? 'hang' : { status: 200, json: {} }));
    const first = await spawnServer(env, await freePort());
    const host1 = first.url.replace('http://', '');
    const mac = new qiniu.auth.digest.Mac(AK, SK);
    const bm = new qiniu.rs.BucketManager(mac, staticZoneConfig(host1));
    expect((await sdk(bm.createBucket('ev-crash', { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk(bm.putBucketEvent('ev-crash', { name: 'hold', event: 'put', callbackURL: `${app.base}/hold` }))).status).toBe(200);
    const token = new qiniu.rs.PutPolicy({ scope: 'ev-crash' } as qiniu.rs.PutPolicyOptions).uploadToken(mac);
    const up = await sdk(new qiniu.form_up.FormUploader(staticZoneConfig(host1)).put(token, 'k', Buffer.from('acknowledged'), new qiniu.form_up.PutExtra()));
    expect(up.status).toBe(200);

    // The first delivery is being made (the app holds it open): kill the server now.
    const [held] = await app.received('/hold', 1);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const second = await spawnServer(env, await freePort());
    try {
      const got = await app.received('/hold', 2);
      expect(got[1]?.body).toBe(held?.body); // the same event (same id), delivered again
      expect(messageOf(got[1] as AppRequest).message).toMatchObject({ event: 'put', bucket: 'ev-crash', key: 'k' });
      expectSigned(got[1] as AppRequest, mac);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});

describe('CLI', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-events-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs `granary <args> --data-dir <dir>` in this process; resolves with what it printed. */
  async function cli(...args: string[]): Promise<string> {
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    try {
      await buildCli().parseAsync(['node', 'granary', ...args, '--data-dir', dir]);
    } finally {
      spy.mockRestore();
    }
    return out;
  }

  it('adds, lists, updates and deletes rules with the same checks as the API', async () => {
    await cli('bucket', 'create', 'ev-cli');
    expect(await cli('bucket', 'event', 'add', 'ev-cli', 'hook', '--event', 'put,delete', '--callback', 'http://app.example/a', '--callback', 'http://app.example/b', '--prefix', 'p/')).toBe(
      'added event rule hook to bucket ev-cli\n',
    );
    expect(await cli('bucket', 'event', 'list', 'ev-cli')).toBe('hook\tput,delete\tp/\t\thttp://app.example/a;http://app.example/b\n');
    expect(await cli('bucket', 'event', 'update', 'ev-cli', 'hook', '--event', 'copy', '--suffix', '.jpg')).toBe('updated event rule hook of bucket ev-cli\n');
    const json = JSON.parse(await cli('bucket', 'event', 'list', 'ev-cli', '--json')) as Array<Record<string, unknown>>;
    expect(json).toEqual([expect.objectContaining({ name: 'hook', prefix: 'p/', suffix: '.jpg', events: ['copy'], callback_urls: ['http://app.example/a', 'http://app.example/b'] })]);

    const refused = async (args: string[], status: number, message: RegExp): Promise<void> => {
      const err: unknown = await cli(...args).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isKodoError(err), String(err)).toBe(true);
      expect(isKodoError(err) && err.status).toBe(status);
      expect((err as Error).message).toMatch(message);
    };
    await refused(['bucket', 'event', 'add', 'ev-cli', 'other', '--event', 'upload', '--callback', 'http://app.example/a'], 400, /unknown event name/);
    await refused(['bucket', 'event', 'add', 'ev-cli', 'hook', '--event', 'put', '--callback', 'http://app.example/a'], 400, /exists/);
    await refused(['bucket', 'event', 'add', 'ev-cli', 'other', '--event', 'put'], 400, /callbackURL is required/);
    await refused(['bucket', 'event', 'list', 'ev-nope'], 631, /no such bucket/);

    expect(await cli('bucket', 'event', 'delete', 'ev-cli', 'hook')).toBe('deleted event rule hook of bucket ev-cli\n');
    expect(await cli('bucket', 'event', 'list', 'ev-cli')).toBe('');
    await refused(['bucket', 'event', 'delete', 'ev-cli', 'hook'], 612, /no such event rule/);
  });
});
