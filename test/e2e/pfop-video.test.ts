/**
 * Persistent processing with video (docs/development/kodo-protocol.md §9, §10.6): the job engine running avthumb and vframe on
 * the Big Buck Bunny fixture. A form upload through the official SDK with persistentOps (avthumb with an image
 * watermark, vframe, both with saveas) and a persistentNotifyUrl: prefop goes 1 → 2 → 0, the outputs are checked
 * with ffprobe run by the test, the notify body is the final record; the watermark from the source bucket and from
 * a loopback origin; returnOld without force, overwritten with force; failing commands (code 3 with error), bad
 * input, a notify URL answering 500 (code 4); vframe and avinfo on the resource URL; a graceful stop and a SIGKILL
 * of the server while ffmpeg runs (the job resumes, its output stored once, no ffmpeg left running); the job time
 * limit with commands queued for the one video slot.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import qiniu from 'qiniu';
import sharp from 'sharp';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlsafeB64Encode } from '../../src/auth/base64.js';
import { loadConfig } from '../../src/config.js';
import { startGranary, type RunningGranary } from '../../src/main.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { startCallbackApp, type CallbackApp } from '../helpers/callback-app.js';
import { serveBytes, startOrigin, type Origin } from '../helpers/fetch-origin.js';
import { putPipeline, saveas, sdkPfop, sdkPrefop, startNotifyReceiver, waitFinal, type NotifyReceiver, type Record as PrefopRecord } from '../helpers/pfop.js';
import { AK, SK, sdk, startTestServer, staticZoneConfig, type TestServer } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { createBucket, download, expectError, FIXTURE_IMAGES, readAnswer } from '../helpers/upload.js';

const VIDEO = join(FIXTURE_IMAGES, '..', 'video', 'big_buck_bunny.mp4');
/** A 100×68 camera JPEG: the watermark. */
const WATERMARK = join(FIXTURE_IMAGES, 'Canon_40D.jpg');
const B = 'pv-src';
const OUT = 'pv-out';
const exec = promisify(execFile);

type Json = { [k: string]: unknown };
interface Probe {
  streams: Json[];
  format: Json;
}

/** ffprobe's view of `bytes` (written to a temp file first). */
async function probe(dir: string, name: string, bytes: Buffer): Promise<Probe> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const { stdout } = await exec('ffprobe', ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', path]);
  return JSON.parse(stdout) as Probe;
}

const videoStream = (p: Probe): Json => p.streams.find((st) => st.codec_type === 'video') as Json;

/** Polls prefop (20 ms apart) until `pred` holds for the record; fails after `timeoutMs`. */
async function waitFor(s: Pick<TestServer, 'url' | 'mac' | 'zoneConfig'>, id: string, pred: (r: PrefopRecord) => boolean, what: string, timeoutMs = 30_000): Promise<PrefopRecord> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await sdkPrefop(s as TestServer, id);
    if (r.status !== 200) throw new Error(`prefop ${id}: ${r.status} ${JSON.stringify(r.data)}`);
    if (pred(r.data)) return r.data;
    if (Date.now() > end) throw new Error(`job ${id}: ${what} not seen after ${timeoutMs} ms (last ${JSON.stringify(r.data)})`);
    await delay(20);
  }
}

describe('pfop with video', () => {
  let s: TestServer;
  let notify: NotifyReceiver;
  let app: CallbackApp;
  let origin: Origin;
  let dir: string;
  let source: Probe;
  let wmBytes: Buffer;

  const up = (): qiniu.form_up.FormUploader => new qiniu.form_up.FormUploader(s.zoneConfig());
  const put = async (key: string, body: Buffer): Promise<void> => {
    const r = await sdk(up().put(s.uploadToken({ scope: `${B}:${key}` }), key, body, new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
  };
  const stat = async (bucket: string, key: string): Promise<{ status: number; data: { hash: string; putTime: number; mimeType: string } }> =>
    sdk(s.bucketManager().stat(bucket, key));
  const ops = (wmUrl: string, thumbKey: string, frameKey: string, extra = ''): string =>
    `avthumb/mp4/s/320x180${extra}/wmImage/${urlsafeB64Encode(wmUrl)}|${saveas(OUT, thumbKey)};vframe/jpg/offset/5|${saveas(OUT, frameKey)}`;

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1', GRANARY_NOTIFY_ATTEMPTS: '3', GRANARY_NOTIFY_RETRY_MS: '10' });
    notify = await startNotifyReceiver();
    app = await startCallbackApp();
    origin = await startOrigin('127.0.0.1');
    dir = await mkdtemp(join(tmpdir(), 'granary-pfop-video-'));
    await createBucket(s, B);
    await createBucket(s, OUT);
    wmBytes = await readFile(WATERMARK);
    origin.route('/wm.jpg', serveBytes(wmBytes, 'image/jpeg'));
    await put('wm.jpg', wmBytes);
    await put('notes.txt', Buffer.from('not a video at all\n'));
    source = await probe(dir, 'source.mp4', await readFile(VIDEO));
  }, 60_000);
  afterAll(async () => {
    await notify?.close();
    await app?.close();
    await origin?.close();
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('form upload with persistentOps: persistentId, prefop 1 → 2 → 0, outputs checked by ffprobe, notify = final record; returnOld, force', async () => {
    expect((await putPipeline(s, 'video-held', 0)).status).toBe(200);
    const fops = ops(`${s.url}/${B}/wm.jpg`, 'thumb.mp4', 'frame.jpg');
    const token = s.uploadToken({ scope: `${B}:bunny.mp4`, persistentOps: fops, persistentNotifyUrl: notify.url, persistentPipeline: 'video-held' });
    const r = await sdk<{ persistentId: string; key: string; hash: string }>(up().put(token, 'bunny.mp4', await readFile(VIDEO), new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
    expect(r.data.key).toBe('bunny.mp4');
    const id = r.data.persistentId;
    expect(id).toMatch(/^z0\.[0-9a-f]{24}$/);

    // The pipeline is paused: the job waits (1).
    const waiting = await sdkPrefop(s, id);
    expect(waiting.data).toMatchObject({ id, code: 1, pipeline: 'video-held', inputBucket: B, inputKey: 'bunny.mp4', taskFrom: 'upload' });
    expect(waiting.data.items.map((i) => i.code)).toEqual([1, 1]);

    // Resumed: processing (2) while ffmpeg runs, before any item is final.
    expect((await putPipeline(s, 'video-held', 1)).status).toBe(200);
    const processing = await waitFor(s, id, (rec) => rec.code !== 1, 'processing');
    expect(processing.code).toBe(2);
    expect(processing.desc).toBe('The fop is executing now');

    // Still processing (2) while the notification is unanswered, every item final.
    const note = await notify.next();
    const notifying = await sdkPrefop(s, id);
    expect(notifying.data.code).toBe(2);
    expect(notifying.data.items.map((i) => i.code)).toEqual([0, 0]);
    note.answer(200);
    const final = await waitFinal(s, id);
    expect(final.code).toBe(0);
    expect(JSON.parse(note.body)).toEqual(final);
    expect(final.items.map((i) => [i.key, i.returnOld, i.error])).toEqual([
      ['thumb.mp4', 0, ''],
      ['frame.jpg', 0, ''],
    ]);

    // avthumb: H.264 320×180 with AAC audio, as long as the source.
    const thumb = await download(s, OUT, 'thumb.mp4');
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('video/mp4');
    expect((await stat(OUT, 'thumb.mp4')).data.hash).toBe(final.items[0]!.hash);
    const t = await probe(dir, 'thumb.mp4', thumb.body);
    expect([videoStream(t).codec_name, videoStream(t).width, videoStream(t).height]).toEqual(['h264', 320, 180]);
    expect(t.streams.some((st) => st.codec_type === 'audio' && st.codec_name === 'aac')).toBe(true);
    expect(Math.abs(Number(t.format.duration) - Number(source.format.duration))).toBeLessThan(0.5);
    // vframe: a JPEG of the video's size.
    const frame = await download(s, OUT, 'frame.jpg');
    expect(frame.headers.get('content-type')).toBe('image/jpeg');
    const f = await probe(dir, 'frame.jpg', frame.body);
    expect([videoStream(f).codec_name, videoStream(f).width, videoStream(f).height]).toEqual(['mjpeg', videoStream(source).width, videoStream(source).height]);
    expect((await sharp(frame.body).metadata()).format).toBe('jpeg');

    // The same ops again without force: both outputs kept (returnOld 1), nothing rewritten.
    const before = await stat(OUT, 'thumb.mp4');
    const again = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', fops.split(';'), '')).data.persistentId as string);
    expect(again.code).toBe(0);
    expect(again.items.map((i) => [i.code, i.returnOld, i.key, i.hash])).toEqual(final.items.map((i) => [0, 1, i.key, i.hash]));
    expect((await stat(OUT, 'thumb.mp4')).data.putTime).toBe(before.data.putTime);

    // With force=1 both run again and replace the outputs.
    const forced = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', fops.split(';'), '', { force: true })).data.persistentId as string, 60_000);
    expect(forced.code).toBe(0);
    expect(forced.items.map((i) => i.returnOld)).toEqual([0, 0]);
    expect((await stat(OUT, 'thumb.mp4')).data.putTime).toBeGreaterThan(before.data.putTime);
    const t2 = await probe(dir, 'thumb2.mp4', (await download(s, OUT, 'thumb.mp4')).body);
    expect([videoStream(t2).width, videoStream(t2).height]).toEqual([320, 180]);
  }, 60_000);

  it('the watermark from a loopback origin (through the outbound guard)', async () => {
    const fops = ops(`${origin.base}/wm.jpg`, 'thumb-origin.mp4', 'frame-origin.jpg', '/t/2');
    const before = origin.requests.length;
    const final = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', fops.split(';'), '')).data.persistentId as string, 30_000);
    expect(final.code, JSON.stringify(final)).toBe(0);
    expect(origin.requests.slice(before).map((r) => r.url)).toEqual(['/wm.jpg']);
    const t = await probe(dir, 'thumb-origin.mp4', (await download(s, OUT, 'thumb-origin.mp4')).body);
    expect([videoStream(t).codec_name, videoStream(t).width, videoStream(t).height]).toEqual(['h264', 320, 180]);
    expect(Math.abs(Number(t.format.duration) - 2)).toBeLessThan(0.3);

    // An origin answering 404 for the watermark fails the item with an error; no output.
    const missing = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', [`avthumb/mp4/t/1/wmImage/${urlsafeB64Encode(`${origin.base}/nope.jpg`)}|${saveas(OUT, 'never.mp4')}`], '')).data.persistentId as string);
    expect(missing.code).toBe(3);
    expect(missing.items[0]).toMatchObject({ code: 3, key: '', hash: '' });
    expect(missing.items[0]!.error).toMatch(/404/);
    expect((await download(s, OUT, 'never.mp4')).status).toBe(404);
  }, 30_000);

  it('failing commands: an offset past the end, non-video inputs → item code 3 with error, job code 3', async () => {
    const past = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', [`vframe/jpg/offset/9999|${saveas(OUT, 'past.jpg')}`, `vframe/jpg/offset/1|${saveas(OUT, 'ok.jpg')}`], '')).data.persistentId as string);
    expect(past.code).toBe(3);
    expect(past.desc).toBe('The fop is failed');
    expect(past.items[0]).toMatchObject({ code: 3, desc: 'The fop is failed', key: '', hash: '', errorIndex: 0 });
    expect(past.items[0]!.error).toMatch(/vframe: offset 9999\.000 s is past the end/);
    expect(past.items[1]).toMatchObject({ code: 0, key: 'ok.jpg' });
    expect((await download(s, OUT, 'past.jpg')).status).toBe(404);

    const text = await waitFinal(s, (await sdkPfop(s, B, 'notes.txt', [`avthumb/mp4|${saveas(OUT, 'text.mp4')}`], '')).data.persistentId as string);
    expect(text.code).toBe(3);
    expect(text.items[0]!.code).toBe(3);
    expect(text.items[0]!.error).toMatch(/avthumb: input: Invalid data/);
    expect(text.items[0]!.error).not.toContain(s.dataDir);
    const jpeg = await waitFinal(s, (await sdkPfop(s, B, 'wm.jpg', ['vframe/jpg/offset/5'], '')).data.persistentId as string);
    expect(jpeg.code).toBe(3);
    expect(jpeg.items[0]!.error).toMatch(/past the end/);
    // A JSON command on a video works as a persistent command too (stored as application/json).
    const info = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', [`avinfo|${saveas(OUT, 'info.json')}`], '')).data.persistentId as string);
    expect(info.code).toBe(0);
    const doc = JSON.parse((await download(s, OUT, 'info.json')).body.toString()) as { format: { duration: string } };
    expect(doc.format.duration).toBe(source.format.duration);
  }, 30_000);

  it('bad input: unknown command and bad offset 400, missing key 612, malformed persistentId 400', async () => {
    const unknown = await sdkPfop(s, B, 'bunny.mp4', ['vframes/jpg/offset/5'], '');
    expect(unknown.status).toBe(400);
    expect(unknown.data.error).toMatch(/vframes/);
    const badOffset = await sdkPfop(s, B, 'bunny.mp4', ['vframe/jpg/offset/abc'], '');
    expect(badOffset.status).toBe(400);
    expect(badOffset.data.error).toMatch(/vframe: offset must be a number of seconds/);
    const badAvthumb = await sdkPfop(s, B, 'bunny.mp4', ['avthumb/mkv'], '');
    expect(badAvthumb.status).toBe(400);
    expect(badAvthumb.data.error).toMatch(/avthumb: unsupported format/);
    const missing = await sdkPfop(s, B, 'no-such.mp4', ['vframe/jpg/offset/5'], '');
    expect(missing.status).toBe(612);
    expectError(await readAnswer(await fetch(`${s.url}/status/get/prefop?id=${encodeURIComponent('../etc/passwd')}`)), 400, /persistentId/);
    expect((await sdkPrefop(s, 'z0.ffffffffffffffffffffffff')).status).toBe(612);
  });

  it('a notify URL answering 500 makes the job code 4 after every attempt', async () => {
    app.on('/fail', () => ({ status: 500, json: { error: 'down' } }));
    const sub = await sdkPfop(s, B, 'bunny.mp4', [`vframe/jpg/offset/2|${saveas(OUT, 'n500.jpg')}`], '', { notifyURL: `${app.base}/fail` });
    const final = await waitFinal(s, sub.data.persistentId as string);
    expect(final.code).toBe(4);
    expect(final.desc).toBe('Callback failed');
    expect(final.items[0]).toMatchObject({ code: 0, key: 'n500.jpg' });
    const calls = app.requests.filter((r) => r.url === '/fail');
    expect(calls).toHaveLength(3);
    for (const c of calls) {
      expect(c.method).toBe('POST');
      expect(c.headers['content-type']).toBe('application/json');
      expect(JSON.parse(c.body)).toEqual({ ...final, code: 0, desc: 'The fop was completed successfully' });
    }
    expect((await download(s, OUT, 'n500.jpg')).status).toBe(200);
  });

  it('?vframe/jpg/offset/5 and ?avinfo on the resource URL', async () => {
    const frame = await fetch(`${s.url}/${B}/bunny.mp4?vframe/jpg/offset/5`);
    expect(frame.status).toBe(200);
    expect(frame.headers.get('content-type')).toBe('image/jpeg');
    expect(await sharp(Buffer.from(await frame.arrayBuffer())).metadata()).toMatchObject({ format: 'jpeg', width: 640, height: 360 });
    const info = await fetch(`${s.url}/${B}/bunny.mp4?avinfo`);
    expect(info.status).toBe(200);
    const doc = (await info.json()) as { streams: Json[]; format: Json };
    expect(doc.format).toMatchObject({ duration: source.format.duration, size: source.format.size, filename: 'input' });
    expect(doc.streams[0]).toMatchObject({ codec_type: 'video', codec_name: 'h264', width: 640, height: 360 });
  });
});

/** Processes whose parent is `pid` and whose command name is `comm`. */
async function childrenOf(pid: number, comm: string): Promise<number[]> {
  try {
    const { stdout } = await exec('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)]);
    return stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter(([, c]) => c === comm)
      .map(([p]) => Number(p));
  } catch {
    return []; // ps exits 1 when there are none
  }
}

/** True while process `pid` runs (a zombie waiting to be reaped counts as ended). */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && !/^\d+ \(.*\) Z/.test(stat);
}

describe('a video job and a graceful stop', () => {
  it('close() kills the running ffmpeg and releases the job; the next start runs it to code 0', async () => {
    const s = await startTestServer();
    let next: RunningGranary | undefined;
    try {
      await createBucket(s, B);
      const token = s.uploadToken({ scope: `${B}:bunny.mp4` });
      expect((await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'bunny.mp4', await readFile(VIDEO), new qiniu.form_up.PutExtra()))).status).toBe(200);
      const id = (await sdkPfop(s, B, 'bunny.mp4', [`avthumb/mp4/s/480x270/t/40|${saveas(B, 'stopped.mp4')}`], '')).data.persistentId as string;
      await waitFor(s, id, (r) => r.code === 2, 'processing');
      const end = Date.now() + 10_000;
      while ((await childrenOf(process.pid, 'ffmpeg')).length === 0) {
        if (Date.now() > end) throw new Error('no ffmpeg running');
        await delay(20);
      }
      await s.running.close();
      // ffmpeg was killed (reaped within moments), the job is waiting again with its attempt given back.
      const gone = Date.now() + 2000;
      while ((await childrenOf(process.pid, 'ffmpeg')).length > 0 && Date.now() < gone) await delay(20);
      expect(await childrenOf(process.pid, 'ffmpeg')).toEqual([]);
      const store = new SqliteMetaStore(join(s.dataDir, 'meta.db'));
      const stored = await store.jobs.get(id);
      await store.close();
      expect(stored).toMatchObject({ state: 'waiting', code: 1, attempts: 0 });
      next = await startGranary(
        loadConfig({ GRANARY_PORT: '0', GRANARY_CONSOLE_PORT: '0', GRANARY_S3_PORT: '0', GRANARY_HOST: '127.0.0.1', GRANARY_DATA_DIR: s.dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK }),
        { logger: pino({ level: 'silent' }) },
      );
      const restarted = { ...s, url: next.url, zoneConfig: () => staticZoneConfig(`127.0.0.1:${next?.port ?? 0}`) };
      const final = await waitFinal(restarted, id, 30_000);
      expect(final.code).toBe(0);
      expect(final.items[0]).toMatchObject({ code: 0, returnOld: 0, key: 'stopped.mp4' });
      const out = await fetch(`${next.url}/${B}/stopped.mp4`);
      const p = await probe(s.dataDir, 'stopped-check.mp4', Buffer.from(await out.arrayBuffer()));
      expect(Math.abs(Number(p.format.duration) - 40)).toBeLessThan(0.3);
    } finally {
      await next?.close();
      await s.stop();
    }
  }, 60_000);
});

describe('a video job survives a server crash', () => {
  let dataDir = '';
  let child: ChildServer | undefined;
  afterAll(async () => {
    child?.child.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('SIGKILL while ffmpeg runs; after a restart the job ends with code 0, its output stored once, no ffmpeg left over', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-pvcrash-'));
    const port = await freePort();
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK };
    child = await spawnServer(env, port);
    const host = `127.0.0.1:${port}`;
    const mac = new qiniu.auth.digest.Mac(AK, SK);
    const zoneConfig = (): qiniu.conf.Config => staticZoneConfig(host);
    const s = { url: child.url, mac, zoneConfig } as unknown as TestServer;
    const bm = (): qiniu.rs.BucketManager => new qiniu.rs.BucketManager(mac, zoneConfig());
    expect((await sdk(bm().createBucket(B, { regionId: 'z0' }))).status).toBe(200);
    const token = new qiniu.rs.PutPolicy({ scope: `${B}:bunny.mp4` }).uploadToken(mac);
    expect((await sdk(new qiniu.form_up.FormUploader(zoneConfig()).put(token, 'bunny.mp4', await readFile(VIDEO), new qiniu.form_up.PutExtra()))).status).toBe(200);

    const id = (await sdkPfop(s, B, 'bunny.mp4', [`avthumb/mp4/s/480x270|${saveas(B, 'crash.mp4')}`], '')).data.persistentId as string;
    await waitFor(s, id, (r) => r.code === 2, 'processing');
    // ffmpeg is running under the server when it is killed.
    const end = Date.now() + 10_000;
    let ffmpegs: number[] = [];
    while ((ffmpegs = await childrenOf(child.child.pid as number, 'ffmpeg')).length === 0) {
      if (Date.now() > end) throw new Error('no ffmpeg under the server');
      await delay(20);
    }
    child.child.kill('SIGKILL');
    await child.exited;

    child = await spawnServer(env, port);
    // The ffmpeg of the killed server (its transcode had only begun) does not outlive the restart.
    const reaped = Date.now() + 10_000;
    const leftover = async (): Promise<number[]> => (await Promise.all(ffmpegs.map(async (p) => ((await alive(p)) ? [p] : [])))).flat();
    while ((await leftover()).length > 0 && Date.now() < reaped) await delay(20);
    expect(await leftover(), 'ffmpeg of the killed server still running').toEqual([]);
    const final = await waitFinal(s, id, 60_000);
    expect(final.code).toBe(0);
    expect(final.items[0]).toMatchObject({ code: 0, returnOld: 0, key: 'crash.mp4', error: '' });
    // Exactly one output: the source and crash.mp4, nothing else (no generated keys, no duplicates).
    const listed = await sdk<{ items: Array<{ key: string; hash: string }> }>(bm().listPrefix(B, { limit: 100 }));
    expect(listed.data.items.map((i) => i.key).sort()).toEqual(['bunny.mp4', 'crash.mp4']);
    expect(listed.data.items.find((i) => i.key === 'crash.mp4')?.hash).toBe(final.items[0]!.hash);
    const out = await fetch(`${child.url}/${B}/crash.mp4`);
    expect(out.status).toBe(200);
    const probeDir = await mkdtemp(join(tmpdir(), 'granary-pvcrash-out-'));
    try {
      const p = await probe(probeDir, 'crash.mp4', Buffer.from(await out.arrayBuffer()));
      expect([videoStream(p).codec_name, videoStream(p).width, videoStream(p).height]).toEqual(['h264', 480, 270]);
      expect(Math.abs(Number(p.format.duration) - 60.1)).toBeLessThan(0.5);
    } finally {
      await rm(probeDir, { recursive: true, force: true });
    }
    // Nothing is left in the fop temp dir.
    const leftovers = await exec('find', [join(dataDir, 'fop-tmp'), '-type', 'f']).then((r) => r.stdout.trim());
    expect(leftovers).toBe('');
  }, 60_000);
});

describe('pfop time limit with video jobs queued for the video slot', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Eight jobs run at once in their pipeline, but one ffmpeg at a time (GRANARY_VIDEO_CONCURRENCY 1).
    s = await startTestServer({ GRANARY_JOB_TIMEOUT: '5', GRANARY_VIDEO_CONCURRENCY: '1' });
    await createBucket(s, B);
    const token = s.uploadToken({ scope: `${B}:bunny.mp4` });
    expect((await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'bunny.mp4', await readFile(VIDEO), new qiniu.form_up.PutExtra()))).status).toBe(200);
    expect((await putPipeline(s, 'eight', 8)).status).toBe(200);
  }, 30_000);
  afterAll(async () => s?.stop());

  it('GRANARY_JOB_TIMEOUT counts the time a command runs, not the time it waits for a slot', async () => {
    // Each command takes about a second alone (a fifth of the limit); together they take longer than 5 s.
    const ids = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => (await sdkPfop(s, B, 'bunny.mp4', [`avthumb/mp4/s/320x180/t/10|${saveas(B, `q-${i}.mp4`)}`], 'eight')).data.persistentId as string),
    );
    const finals = await Promise.all(ids.map((id) => waitFinal(s, id, 60_000)));
    for (const f of finals) expect(f.items[0], JSON.stringify(f.items[0])).toMatchObject({ code: 0, error: '' });

    // A command running longer than the limit fails its item: ffmpeg is killed, an audio/video error.
    const slow = await waitFinal(s, (await sdkPfop(s, B, 'bunny.mp4', [`avthumb/mp4/r/60/vb/5m|${saveas(B, 'slow.mp4')}`], '')).data.persistentId as string, 30_000);
    expect(slow.code).toBe(3);
    expect(slow.items[0]!.error).toMatch(/^audio\/video processing failed: avthumb: processing timed out after 5 s/);
    expect((await download(s, B, 'slow.mp4')).status).toBe(404);
  }, 60_000);
});
