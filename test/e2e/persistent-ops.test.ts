/**
 * persistentOps in put policies (docs/development/kodo-protocol.md §4.4, §3.1): form upload, resumable v1 (mkfile) and v2 (complete)
 * answer a persistentId (also as `$(persistentId)`), the job runs and notifies persistentNotifyUrl with its final
 * record; persistentOps that do not parse store the upload and fail the job (code 3), an unknown
 * persistentPipeline refuses the upload (nothing stored). A job survives a
 * SIGKILL of the server in the middle of its commands: after a restart it continues from its first unfinished
 * command and ends with code 0, each output stored once.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import qiniu from 'qiniu';
import sharp from 'sharp';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startGranary } from '../../src/main.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { saveas, sdkPfop, sdkPrefop, startNotifyReceiver, waitFinal, type NotifyReceiver } from '../helpers/pfop.js';
import { AK, SK, sdk, startTestServer, staticZoneConfig, type TestServer } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { createBucket, download } from '../helpers/upload.js';

const B = 'ops-bucket';

/** A `w`×`h` JPEG of noise (no two runs of a command are cheap on it). */
async function noiseJpeg(w: number, h: number): Promise<Buffer> {
  return sharp({ create: { width: w, height: h, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

describe('persistentOps on uploads', () => {
  let s: TestServer;
  let notify: NotifyReceiver;
  let photo: Buffer;
  let dir: string;

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1', GRANARY_NOTIFY_RETRY_MS: '10' });
    notify = await startNotifyReceiver();
    await createBucket(s, B);
    photo = await noiseJpeg(320, 240);
    dir = await mkdtemp(join(tmpdir(), 'granary-ops-'));
  });
  afterAll(async () => {
    await notify?.close();
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('form upload: the answer carries persistentId; the notify body equals the final prefop record', async () => {
    const token = s.uploadToken({
      scope: B,
      persistentOps: `imageView2/2/w/160|${saveas(B, 'form-thumb.jpg')};imageInfo`,
      persistentNotifyUrl: notify.url,
    });
    const r = await sdk<{ persistentId: string; key: string }>(
      new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'form.jpg', photo, new qiniu.form_up.PutExtra()),
    );
    expect(r.status).toBe(200);
    expect(r.data.persistentId).toMatch(/^z0\.[0-9a-f]{24}$/);
    const note = await notify.next();
    note.answer(200);
    const final = await waitFinal(s, r.data.persistentId);
    expect(JSON.parse(note.body)).toEqual(final);
    expect(final).toMatchObject({ code: 0, inputBucket: B, inputKey: 'form.jpg', taskFrom: 'upload', pipeline: '0.default' });
    expect(final.reqid).toMatch(/\S/);
    const thumb = await download(s, B, 'form-thumb.jpg');
    expect(await sharp(thumb.body).metadata()).toMatchObject({ width: 160, height: 120 });
    expect(JSON.parse((await download(s, B, final.items[1]!.key)).body.toString())).toMatchObject({ width: 320, height: 240 });
  });

  it('$(persistentId) in returnBody, persistentPipeline and persistentType are honoured', async () => {
    const token = s.uploadToken({
      scope: B,
      persistentOps: 'imageAve',
      persistentPipeline: '0.default',
      persistentType: 1,
      returnBody: '{"id":$(persistentId),"key":$(key)}',
    });
    const r = await sdk<{ id: string; key: string }>(
      new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'rb.jpg', photo, new qiniu.form_up.PutExtra()),
    );
    expect(r.status).toBe(200);
    const final = await waitFinal(s, r.data.id);
    expect(final).toMatchObject({ code: 0, type: 1, inputKey: 'rb.jpg' });
  });

  it.each(['v1', 'v2'] as const)('resumable %s upload with persistentOps answers a persistentId and the job runs', async (version) => {
    const path = join(dir, `${version}.jpg`);
    await writeFile(path, photo);
    const key = `resumable-${version}.jpg`;
    const token = s.uploadToken({ scope: `${B}:${key}`, persistentOps: `imageView2/1/w/40/h/40|${saveas(B, `${key}.sq.jpg`)}` });
    const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, version);
    const r = await sdk<{ persistentId: string; key: string }>(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(token, key, path, extra));
    expect(r.status).toBe(200);
    expect(r.data.key).toBe(key);
    const final = await waitFinal(s, r.data.persistentId);
    expect(final.code).toBe(0);
    expect(await sharp((await download(s, B, `${key}.sq.jpg`)).body).metadata()).toMatchObject({ width: 40, height: 40 });
  });

  it('persistentOps that do not parse store the upload and fail the job (Java FormUploadTest.testUploadWithFop)', async () => {
    // java-sdk FormUploadTest.testUploadWithFop: persistentOps "javasdk:vframe_test_target.jpg" (no command at all),
    // persistentType 1. Kodo stores the object, answers a persistentId and the job ends failed (prefop code 3).
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    for (const [key, ops] of [['java-fop.jpg', 'javasdk:vframe_test_target.jpg'], ['bad-ops.jpg', 'bogusCmd/1']] as const) {
      const r = await sdk<{ persistentId: string; key: string; hash: string }>(
        up.put(s.uploadToken({ scope: B, persistentOps: ops, persistentType: 1 }), key, photo, new qiniu.form_up.PutExtra()),
      );
      expect(r.status, JSON.stringify(r.data)).toBe(200);
      expect(r.data.persistentId).toMatch(/^z0\.[0-9a-f]{24}$/);
      expect((await download(s, B, key)).body.equals(photo)).toBe(true);
      const final = await waitFinal(s, r.data.persistentId);
      expect(final).toMatchObject({ code: 3, inputKey: key, taskFrom: 'upload' });
      expect(final.items[0]).toMatchObject({ code: 3, error: expect.stringMatching(ops === 'bogusCmd/1' ? /bogusCmd/ : /\S/) });
    }
  });

  it('an unknown persistentPipeline refuses the upload with 400 and stores nothing', async () => {
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    const pipe = await sdk<{ error: string }>(
      up.put(s.uploadToken({ scope: B, persistentOps: 'imageInfo', persistentPipeline: 'nowhere' }), 'bad-pipe.jpg', photo, new qiniu.form_up.PutExtra()),
    );
    expect(pipe.status).toBe(400);
    expect(pipe.data.error).toMatch(/nowhere/);
    expect((await download(s, B, 'bad-pipe.jpg')).status).toBe(404);
  });
});

describe('graceful stop', () => {
  it('close() aborts a running job and releases it; the next start resumes it to code 0', async () => {
    const s = await startTestServer({ GRANARY_FOP_CONCURRENCY: '1' });
    let next: Awaited<ReturnType<typeof startGranary>> | undefined;
    try {
      await createBucket(s, B);
      const big = await noiseJpeg(2400, 1800);
      const token = s.uploadToken({ scope: B });
      expect((await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'big.jpg', big, new qiniu.form_up.PutExtra()))).status).toBe(200);
      const N = 12;
      const fops = Array.from({ length: N }, (_, i) => `imageView2/2/w/${1900 - i}|${saveas(B, `g-${i}.jpg`)}`);
      const id = (await sdkPfop(s, B, 'big.jpg', fops, '')).data.persistentId as string;
      const end = Date.now() + 60_000;
      for (;;) {
        const r = (await sdkPrefop(s, id)).data;
        if (r.items.some((it) => it.code === 0)) break;
        if (r.code !== 1 && r.code !== 2) throw new Error(`job ended too early: ${JSON.stringify(r)}`);
        if (Date.now() > end) throw new Error('no progress');
        await delay(20);
      }
      await s.running.close();
      const store = new SqliteMetaStore(join(s.dataDir, 'meta.db'));
      const stored = await store.jobs.get(id);
      await store.close();
      expect(stored).toMatchObject({ state: 'waiting', code: 1, attempts: 0 });

      next = await startGranary(
        loadConfig({ GRANARY_PORT: '0', GRANARY_CONSOLE_PORT: '0', GRANARY_S3_PORT: '0', GRANARY_HOST: '127.0.0.1', GRANARY_DATA_DIR: s.dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK }),
        { logger: pino({ level: 'silent' }) },
      );
      const deadline = Date.now() + 60_000;
      let rec: { code: number; items: Array<{ code: number; returnOld: number }> };
      for (;;) {
        rec = (await (await fetch(`${next.url}/status/get/prefop?id=${id}`)).json()) as typeof rec;
        if (rec.code !== 1 && rec.code !== 2) break;
        if (Date.now() > deadline) throw new Error('job did not finish after the restart');
        await delay(20);
      }
      expect(rec.code).toBe(0);
      expect(rec.items.every((it) => it.code === 0 && it.returnOld === 0)).toBe(true);
    } finally {
      await next?.close();
      await s.stop();
    }
  }, 120_000);
});

describe('a job survives a server crash', () => {
  let dataDir = '';
  let child: ChildServer | undefined;
  afterAll(async () => {
    child?.child.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('SIGKILL while processing; after a restart the job resumes and finishes with code 0, each output once', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-jobcrash-'));
    const port = await freePort();
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_FOP_CONCURRENCY: '1' };
    child = await spawnServer(env, port);
    const host = `127.0.0.1:${port}`;
    const mac = new qiniu.auth.digest.Mac(AK, SK);
    const zoneConfig = (): qiniu.conf.Config => staticZoneConfig(host);
    const s = { url: child.url, mac, zoneConfig } as unknown as TestServer;
    const bm = new qiniu.rs.BucketManager(mac, zoneConfig());
    expect((await sdk(bm.createBucket(B, { regionId: 'z0' }))).status).toBe(200);
    const big = await noiseJpeg(2400, 1800);
    const token = new qiniu.rs.PutPolicy({ scope: B }).uploadToken(mac);
    expect((await sdk(new qiniu.form_up.FormUploader(zoneConfig()).put(token, 'big.jpg', big, new qiniu.form_up.PutExtra()))).status).toBe(200);

    const N = 16;
    const fops = Array.from({ length: N }, (_, i) => `imageView2/2/w/${2000 - i}|${saveas(B, `out-${i}.jpg`)}`);
    const id = (await sdkPfop(s, B, 'big.jpg', fops, '')).data.persistentId as string;

    // Wait until some commands are done and others are not, then kill the server.
    let doneBefore: number[];
    const end = Date.now() + 60_000;
    for (;;) {
      const r = (await sdkPrefop(s, id)).data;
      doneBefore = r.items.flatMap((it, i) => (it.code === 0 ? [i] : []));
      if (doneBefore.length >= 2) break;
      if (r.code !== 1 && r.code !== 2) throw new Error(`job ended before the kill: ${JSON.stringify(r)}`);
      if (Date.now() > end) throw new Error('the job made no progress');
      await delay(20);
    }
    expect(doneBefore.length).toBeLessThan(N);
    const putTimes = new Map<number, number>();
    for (const i of doneBefore) putTimes.set(i, ((await sdk(bm.stat(B, `out-${i}.jpg`))).data as { putTime: number }).putTime);
    child.child.kill('SIGKILL');
    await child.exited;

    child = await spawnServer(env, port);
    const final = await waitFinal(s, id, 120_000);
    expect(final.code).toBe(0);
    for (const [i, item] of final.items.entries()) {
      expect(item).toMatchObject({ code: 0, returnOld: 0, key: `out-${i}.jpg` });
      const st = await sdk(new qiniu.rs.BucketManager(mac, zoneConfig()).stat(B, `out-${i}.jpg`));
      expect(st.status).toBe(200);
      expect((st.data as { hash: string }).hash).toBe(item.hash);
      // Commands finished before the kill were not run again.
      if (putTimes.has(i)) expect((st.data as { putTime: number }).putTime).toBe(putTimes.get(i));
    }
    const last = await fetch(`${child.url}/${B}/out-${N - 1}.jpg`);
    expect(await sharp(Buffer.from(await last.arrayBuffer())).metadata()).toMatchObject({ width: 2000 - (N - 1) });
  }, 180_000);
});
