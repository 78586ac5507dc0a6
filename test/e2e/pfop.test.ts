/**
 * Persistent processing through `POST /pfop/` (docs/development/kodo-protocol.md §9): the official SDK's OperationManager.pfop and
 * prefop, pipelines (a paused pipeline holds jobs in state 1), state 1 → 2 → 0, saveas outputs and generated
 * keys, returnOld and force, failing commands (code 3), notify (body = final record; 500 → code 4 after the
 * retries), type 1 after type 0, and bad input.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putPipeline, saveas, sdkPfop, sdkPrefop, signedPost, startNotifyReceiver, waitFinal, type NotifyReceiver } from '../helpers/pfop.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectError, FIXTURE_IMAGES, readAnswer } from '../helpers/upload.js';

const B = 'pfop-src';
const OUT = 'pfop-out';

describe('pfop', () => {
  let s: TestServer;
  let notify: NotifyReceiver;
  let photo: Buffer;

  const put = async (key: string, body: Buffer): Promise<void> => {
    const token = s.uploadToken({ scope: `${B}:${key}` });
    const r = await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, body, new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
  };
  const stat = async (bucket: string, key: string): Promise<{ status: number; data: { hash: string; putTime: number; mimeType: string } }> =>
    sdk(s.bucketManager().stat(bucket, key));

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1', GRANARY_NOTIFY_ATTEMPTS: '3', GRANARY_NOTIFY_RETRY_MS: '10' });
    notify = await startNotifyReceiver();
    await createBucket(s, B);
    await createBucket(s, OUT);
    photo = await readFile(join(FIXTURE_IMAGES, 'gps_DSCN0010.jpg')); // 640×480
    await put('photo.jpg', photo);
    await put('notes.txt', Buffer.from('not an image at all\n'));
  });
  afterAll(async () => {
    await notify?.close();
    await s?.stop();
  });

  it('runs image commands: waiting (1) on a paused pipeline, processing (2) while notifying, then 0; outputs exist', async () => {
    expect((await putPipeline(s, 'held', 0)).status).toBe(200);
    const fops = [`imageView2/2/w/200|${saveas(OUT, 'thumb.jpg')}`, `imageView2/1/w/50/h/50/format/png|${saveas(OUT, 'square.png')}`, 'imageInfo'];
    const sub = await sdkPfop(s, B, 'photo.jpg', fops, 'held', { notifyURL: notify.url });
    expect(sub.status).toBe(200);
    const id = sub.data.persistentId as string;
    expect(id).toMatch(/^z0\.[0-9a-f]{24}$/);

    const waiting = await sdkPrefop(s, id);
    expect(waiting.status).toBe(200);
    expect(waiting.data).toMatchObject({ id, code: 1, desc: 'The fop is waiting for execution', pipeline: 'held', inputBucket: B, inputKey: 'photo.jpg', type: 0, taskFrom: 'pfop' });
    expect(waiting.data.items.map((i) => [i.cmd, i.code])).toEqual(fops.map((f) => [f, 1]));

    // Resume the pipeline: the job runs; while its notification is unanswered it is still "processing".
    expect((await putPipeline(s, 'held', 1)).status).toBe(200);
    const note = await notify.next();
    const processing = await sdkPrefop(s, id);
    expect(processing.data.code).toBe(2);
    expect(processing.data.items.every((i) => i.code === 0)).toBe(true);
    note.answer(200);

    const final = await waitFinal(s, id);
    expect(final.code).toBe(0);
    expect(final.desc).toBe('The fop was completed successfully');
    expect(JSON.parse(note.body)).toEqual(final);
    expect(final.reqid).toMatch(/\S/);
    expect(final.creationDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+08:00$/);

    const [thumb, square, info] = final.items;
    expect(thumb).toMatchObject({ code: 0, key: 'thumb.jpg', returnOld: 0, error: '' });
    const thumbBytes = await download(s, OUT, 'thumb.jpg');
    expect(thumbBytes.status).toBe(200);
    expect(await sharp(thumbBytes.body).metadata()).toMatchObject({ format: 'jpeg', width: 200, height: 150 });
    expect((await stat(OUT, 'thumb.jpg')).data.hash).toBe(thumb!.hash);
    const sq = await download(s, OUT, 'square.png');
    expect(await sharp(sq.body).metadata()).toMatchObject({ format: 'png', width: 50, height: 50 });
    expect(square!.key).toBe('square.png');
    // imageInfo without saveas: a generated key in the source bucket, a JSON object.
    const srcHash = (await stat(B, 'photo.jpg')).data.hash;
    expect(info!.key).toMatch(new RegExp(`^[A-Za-z0-9_-]{27}=/${srcHash}$`));
    const infoObj = await download(s, B, info!.key);
    expect(infoObj.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(infoObj.body.toString())).toMatchObject({ format: 'jpeg', width: 640, height: 480 });
  });

  it('keeps an existing output without force (returnOld: 1) and replaces it with force', async () => {
    const fops = [`imageView2/2/w/100|${saveas(OUT, 'again.jpg')}`];
    const first = await waitFinal(s, (await sdkPfop(s, B, 'photo.jpg', fops, '')).data.persistentId as string);
    expect(first.items[0]).toMatchObject({ code: 0, returnOld: 0, key: 'again.jpg' });
    expect(first.pipeline).toBe('0.default');
    const before = await stat(OUT, 'again.jpg');

    const second = await waitFinal(s, (await sdkPfop(s, B, 'photo.jpg', fops, '')).data.persistentId as string);
    expect(second.code).toBe(0);
    expect(second.items[0]).toMatchObject({ code: 0, returnOld: 1, key: 'again.jpg', hash: first.items[0]!.hash });
    expect((await stat(OUT, 'again.jpg')).data.putTime).toBe(before.data.putTime);

    const forced = await waitFinal(s, (await sdkPfop(s, B, 'photo.jpg', fops, '', { force: true })).data.persistentId as string);
    expect(forced.items[0]).toMatchObject({ code: 0, returnOld: 0, key: 'again.jpg' });
    expect((await stat(OUT, 'again.jpg')).data.putTime).toBeGreaterThan(before.data.putTime);
  });

  it('a failing command makes its item and the job code 3 with an error; the other commands still run', async () => {
    const fops = [`imageInfo|${saveas(OUT, 'ok-info.json')}`, `imageView2/2/w/10|${saveas(OUT, 'never.jpg')}`];
    const sub = await sdkPfop(s, B, 'notes.txt', fops, '');
    expect(sub.status).toBe(200);
    const final = await waitFinal(s, sub.data.persistentId as string);
    expect(final.code).toBe(3);
    expect(final.desc).toBe('The fop is failed');
    for (const item of final.items) {
      expect(item).toMatchObject({ code: 3, desc: 'The fop is failed', errorIndex: 0, key: '', hash: '' });
      expect(item.error).toMatch(/\S/);
    }
    expect((await download(s, OUT, 'never.jpg')).status).toBe(404);

    const cmds = [`imageInfo|${saveas(OUT, 'ok2.json')}`, 'imageInfo|imageView2/2/w/10', 'imageView2/2/w/50|exif'];
    const mixed = await waitFinal(s, (await sdkPfop(s, B, 'photo.jpg', cmds, '')).data.persistentId as string);
    expect(mixed.code).toBe(3);
    expect(mixed.items[0]!.code).toBe(0);
    expect(mixed.items[0]).not.toHaveProperty('errorIndex');
    expect(mixed.items[1]).toMatchObject({ code: 3, errorIndex: 0 });
    expect(mixed.items[1]!.error).toMatch(/imageInfo/);
    // The thumbnail has no EXIF: the second stage (index 1) fails.
    expect(mixed.items[2]).toMatchObject({ code: 3, errorIndex: 1 });
    expect(mixed.items[2]!.error).toMatch(/EXIF/i);
  });

  it('a notify URL answering 500 makes the job code 4 after every attempt', async () => {
    const sub = await sdkPfop(s, B, 'photo.jpg', [`imageView2/2/w/30|${saveas(OUT, 'n500.jpg')}`], '', { notifyURL: notify.url });
    const id = sub.data.persistentId as string;
    const bodies: string[] = [];
    for (let i = 0; i < 3; i++) {
      const n = await notify.next();
      bodies.push(n.body);
      n.answer(500);
    }
    const final = await waitFinal(s, id);
    expect(final.code).toBe(4);
    expect(final.desc).toBe('Callback failed');
    expect(final.items[0]!.code).toBe(0);
    // The body sent is the record with the code before notification (0); afterwards the record says 4.
    for (const b of bodies) expect(JSON.parse(b)).toEqual({ ...final, code: 0, desc: 'The fop was completed successfully' });
    expect((await download(s, OUT, 'n500.jpg')).status).toBe(200);
  });

  it('type 1 (idle-time) jobs run after the type 0 jobs of their pipeline', async () => {
    expect((await putPipeline(s, 'idle', 0)).status).toBe(200);
    const idle = await sdkPfop(s, B, 'photo.jpg', [`imageView2/2/w/20|${saveas(OUT, 'idle.jpg')}`], 'idle', { type: '1' });
    const normal = await sdkPfop(s, B, 'photo.jpg', [`imageView2/2/w/21|${saveas(OUT, 'normal.jpg')}`], 'idle');
    expect((await sdkPrefop(s, idle.data.persistentId as string)).data.type).toBe(1);
    expect((await putPipeline(s, 'idle', 1)).status).toBe(200);
    expect((await waitFinal(s, idle.data.persistentId as string)).code).toBe(0);
    expect((await waitFinal(s, normal.data.persistentId as string)).code).toBe(0);
    expect((await stat(OUT, 'normal.jpg')).data.putTime).toBeLessThan((await stat(OUT, 'idle.jpg')).data.putTime);
  });

  it('prefop by GET with the id in the query, with or without credentials', async () => {
    const id = (await sdkPfop(s, B, 'photo.jpg', ['imageAve'], '')).data.persistentId as string;
    const final = await waitFinal(s, id);
    const plain = await readAnswer(await fetch(`${s.url}/status/get/prefop?id=${id}`));
    expect(plain.status).toBe(200);
    expect(plain.json).toEqual(final);
    const signed = await signedPost(s, `/status/get/prefop?id=${id}`, undefined, 'GET');
    expect(signed.json).toEqual(final);
  });

  it('lists pipelines, and refuses bad pipeline names and concurrencies', async () => {
    const list = await signedPost(s, '/pipelines', undefined, 'GET');
    expect(list.status).toBe(200);
    const names = (list.json as Array<{ name: string; concurrency: number }>).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['0.default', 'held', 'idle']));
    expectError(await putPipeline(s, 'bad name!', 1), 400, /pipeline/);
    expectError(await putPipeline(s, 'ok', 65), 400, /concurrency/);
    expectError(await readAnswer(await fetch(`${s.url}/pipelines`)), 401);
  });

  it('answers bad input with clear errors', async () => {
    const unknown = await sdkPfop(s, B, 'photo.jpg', ['noSuchCmd/1'], '');
    expect(unknown.status).toBe(400);
    expect(unknown.data.error).toMatch(/noSuchCmd/);
    const badParam = await sdkPfop(s, B, 'photo.jpg', ['imageView2/9/w/10'], '');
    expect(badParam.status).toBe(400);
    expect(badParam.data.error).toMatch(/imageView2/);
    const missing = await sdkPfop(s, B, 'nope.jpg', ['imageInfo'], '');
    expect(missing.status).toBe(612);
    const pipe = await sdkPfop(s, B, 'photo.jpg', ['imageInfo'], 'no-such-pipe');
    expect(pipe.status).toBe(400);
    expect(pipe.data.error).toMatch(/no-such-pipe/);
    const noBucket = await sdkPfop(s, 'no-such-bucket', 'photo.jpg', ['imageInfo'], '');
    expect(noBucket.status).toBe(631);
    const badSaveas = await sdkPfop(s, B, 'photo.jpg', [`imageInfo|${saveas('no-such-bucket', 'x')}`], '');
    expect(badSaveas.status).toBe(631);

    expect((await sdkPrefop(s, 'z0.000000000000000000000000')).status).toBe(612);
    expectError(await readAnswer(await fetch(`${s.url}/status/get/prefop?id=${encodeURIComponent('not an id!')}`)), 400, /persistentId/);
    expectError(await readAnswer(await fetch(`${s.url}/status/get/prefop`)), 400, /persistentId/);

    // Unsigned pfop, and the same request to /pfop without the trailing slash.
    expectError(await readAnswer(await fetch(`${s.url}/pfop/`, { method: 'POST', body: 'bucket=a&key=b&fops=imageInfo', headers: { 'content-type': 'application/x-www-form-urlencoded' } })), 401);
    const noSlash = await signedPost(s, '/pfop', `bucket=${B}&key=photo.jpg&fops=imageInfo`);
    expect(noSlash.status).toBe(200);
    expect((await waitFinal(s, (noSlash.json as { persistentId: string }).persistentId)).code).toBe(0);
    expectError(await signedPost(s, '/pfop/', `bucket=${B}&key=photo.jpg&fops=imageInfo&type=7`), 400, /type/);
    expectError(await signedPost(s, '/pfop/', `bucket=${B}&key=photo.jpg&fops=imageInfo&notifyURL=ftp%3A%2F%2Fx`), 400, /notifyURL/);
    expectError(await signedPost(s, '/pfop/', `bucket=${B}&key=photo.jpg&fops=${encodeURIComponent('imageInfo|saveas/!!!')}`), 400);
  });
});

describe('pfop time limit', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ GRANARY_JOB_TIMEOUT: '1' });
    await createBucket(s, B);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a command running longer than GRANARY_JOB_TIMEOUT fails its item (code 3, timed out); the job ends', async () => {
    const big = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
      .jpeg({ quality: 90 })
      .toBuffer();
    const token = s.uploadToken({ scope: `${B}:big.jpg` });
    expect((await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'big.jpg', big, new qiniu.form_up.PutExtra()))).status).toBe(200);
    // Ten full-size re-encodings in one command take well over a second.
    const slow = Array.from({ length: 10 }, (_, i) => `imageView2/0/w/${3990 - i}`).join('|');
    const final = await waitFinal(s, (await sdkPfop(s, B, 'big.jpg', [slow, 'imageInfo'], '')).data.persistentId as string, 60_000);
    expect(final.code).toBe(3);
    expect(final.items[0]).toMatchObject({ code: 3 });
    expect(final.items[0]!.error).toMatch(/timed out after 1 s/);
    expect(final.items[1]!.code).toBe(0);
  }, 90_000);
});
