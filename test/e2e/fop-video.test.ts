/**
 * Audio/video fops (docs/development/kodo-protocol.md §10.4, §10.6): `?avinfo` and `?vframe` on download URLs, avthumb as a persistent
 * command run through executeFops (the entry point of jobs), bad input, time limits killing ffmpeg, and a
 * server without ffmpeg. Outputs are checked with ffprobe and sharp, independently of the server.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import { executeFops } from '../../src/fops/execute.js';
import { parsePipeline } from '../../src/fops/registry.js';
import type { BucketRecord, ObjectRecord } from '../../src/ports/meta.js';
import { upload } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const VIDEO = join(FIXTURE_IMAGES, '..', 'video', 'big_buck_bunny.mp4');
const BUCKET = 'video';
const run = promisify(execFile);
const b64 = (s: string): string => Buffer.from(s).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

type Json = Record<string, unknown>;

/** ffprobe's own view of a file (the reference the server's answers are compared with). */
async function ffprobe(path: string): Promise<{ streams: Json[]; format: Json }> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', path]);
  return JSON.parse(stdout) as { streams: Json[]; format: Json };
}

/** ffmpeg subprocesses of this test process (the server runs in it). */
function ffmpegChildren(): number {
  try {
    return execFileSync('ps', ['-o', 'comm=', '--ppid', String(process.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim() === 'ffmpeg').length;
  } catch {
    return 0; // ps exits 1 when there are no children
  }
}

describe('video fops', () => {
  let s: TestServer;
  let reference: { streams: Json[]; format: Json };

  const get = async (keyAndQuery: string, server = s): Promise<Got> => {
    const res = await fetch(`${server.url}/${BUCKET}/${keyAndQuery}`);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
  };
  const json = (g: Got): Json => JSON.parse(g.body.toString()) as Json;
  const records = async (key: string): Promise<{ bucket: BucketRecord; rec: ObjectRecord }> => {
    const { bucket, object } = await s.running.g.meta.getBucketAndObject(BUCKET, key);
    if (!bucket || !object) throw new Error(`${key} is missing`);
    return { bucket, rec: object };
  };

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, BUCKET);
    await upload(s, BUCKET, 'bunny.mp4', await readFile(VIDEO));
    await upload(s, BUCKET, 'photo.jpg', await readFile(join(FIXTURE_IMAGES, 'Canon_40D.jpg')));
    await upload(s, BUCKET, 'text.txt', 'just some text, not a video');
    const red = await sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 255, g: 0, b: 0 } } }).png().toBuffer();
    await upload(s, BUCKET, 'red.png', red);
    reference = await ffprobe(VIDEO);
  }, 120_000);
  afterAll(async () => s.stop());

  describe('avinfo', () => {
    it("answers ffprobe's streams and format with Kodo's field types", async () => {
      const r = await get('bunny.mp4?avinfo');
      expect(r.status, r.body.toString()).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('cache-control')).toBe('no-store');
      const info = json(r) as { streams: Json[]; format: Json };
      expect(info.streams).toHaveLength(reference.streams.length);
      const [video, audio] = info.streams as [Json, Json];
      const [rv, ra] = reference.streams as [Json, Json];
      expect(video).toMatchObject({
        index: 0,
        codec_type: 'video',
        codec_name: rv.codec_name,
        codec_long_name: rv.codec_long_name,
        codec_tag_string: rv.codec_tag_string,
        codec_tag: rv.codec_tag,
        width: rv.width,
        height: rv.height,
        pix_fmt: rv.pix_fmt,
        r_frame_rate: rv.r_frame_rate,
        avg_frame_rate: rv.avg_frame_rate,
        time_base: rv.time_base,
        start_time: rv.start_time,
        duration: rv.duration,
        bit_rate: rv.bit_rate,
        nb_frames: rv.nb_frames,
        codec_time_base: '1/24',
      });
      expect(audio).toMatchObject({
        index: 1,
        codec_type: 'audio',
        codec_name: ra.codec_name,
        sample_fmt: ra.sample_fmt,
        sample_rate: ra.sample_rate,
        channels: ra.channels,
        duration: ra.duration,
        bit_rate: ra.bit_rate,
        codec_time_base: `1/${String(ra.sample_rate)}`,
      });
      for (const st of info.streams) {
        for (const f of ['duration', 'bit_rate', 'nb_frames', 'start_time']) expect(typeof st[f], f).toBe('string');
        expect(Number.isInteger(st.index)).toBe(true);
        expect(typeof st.tags).toBe('object');
      }
      expect(typeof audio.sample_rate).toBe('string');
      expect(Number.isInteger(audio.channels)).toBe(true);
      expect(Number.isInteger(video.width) && Number.isInteger(video.height)).toBe(true);
      expect(info.format).toMatchObject({
        nb_streams: 2,
        format_name: reference.format.format_name,
        format_long_name: reference.format.format_long_name,
        start_time: reference.format.start_time,
        duration: reference.format.duration,
        size: reference.format.size,
        bit_rate: reference.format.bit_rate,
        tags: reference.format.tags,
      });
      // The stored blob's path never leaks.
      expect(info.format.filename).toBe('input');
      expect(r.body.toString()).not.toContain(s.dataDir);
    });

    it('a text file is a clean 400 that names no path; an image still has a stream', async () => {
      const r = await get('text.txt?avinfo');
      expect(r.status).toBe(400);
      expect(json(r).error).toMatch(/^audio\/video processing failed: avinfo: input: Invalid data/);
      expect(r.body.toString()).not.toContain(s.dataDir);
      const img = await get('photo.jpg?avinfo');
      expect(img.status).toBe(200);
      expect((json(img).streams as Json[])[0]).toMatchObject({ codec_name: 'mjpeg', width: 100, height: 68 });
      expect(await get('bunny.mp4?avinfo/x').then((g) => g.status)).toBe(400);
    });
  });

  describe('vframe', () => {
    it('jpg at 5 s has the video dimensions', async () => {
      const r = await get('bunny.mp4?vframe/jpg/offset/5');
      expect(r.status, r.body.toString()).toBe(200);
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      const m = await sharp(r.body).metadata();
      expect([m.format, m.width, m.height]).toEqual(['jpeg', 640, 360]);
    });

    it('w alone keeps the aspect ratio; png; w and h together are exact; rotate turns the frame', async () => {
      const cases: [string, string, number, number][] = [
        ['vframe/jpg/offset/5/w/320', 'jpeg', 320, 180],
        ['vframe/png/offset/1.5/h/90', 'png', 160, 90],
        ['vframe/png/offset/0/w/100/h/100', 'png', 100, 100],
        ['vframe/jpg/offset/59.9/rotate/90', 'jpeg', 360, 640],
        ['vframe/jpg/offset/10/rotate/270/w/90', 'jpeg', 90, 160],
      ];
      for (const [q, format, w, h] of cases) {
        const r = await get(`bunny.mp4?${q}`);
        expect(r.status, `${q}: ${r.body.toString()}`).toBe(200);
        const m = await sharp(r.body).metadata();
        expect([m.format, m.width, m.height], q).toEqual([format, w, h]);
      }
    });

    it('frames at different offsets differ', async () => {
      const a = await get('bunny.mp4?vframe/png/offset/5/w/64');
      const b = await get('bunny.mp4?vframe/png/offset/30/w/64');
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      const [pa, pb] = await Promise.all([sharp(a.body).raw().toBuffer(), sharp(b.body).raw().toBuffer()]);
      expect(pa.equals(pb)).toBe(false);
    });

    it('an offset past the end is a 400', async () => {
      const r = await get('bunny.mp4?vframe/jpg/offset/70');
      expect(r.status).toBe(400);
      expect(json(r).error).toMatch(/vframe: offset 70\.000 s is past the end of the video/);
    });

    it.each([
      ['vframe/jpg/offset/-1', /vframe: offset must be a number of seconds/],
      ['vframe/jpg/offset/abc', /vframe: offset must be a number of seconds/],
      ['vframe/jpg', /vframe: offset is required/],
      ['vframe/gif/offset/1', /vframe: format must be jpg or png/],
      ['vframe/jpg/offset/1/w/0', /vframe: w must be between 1 and 3840/],
      ['vframe/jpg/offset/1/h/5000', /vframe: h must be between 1 and 2160/],
      ['vframe/jpg/offset/1/rotate/45', /vframe: rotate must be 90, 180, 270 or auto/],
      ['vframe/jpg/offset/1/x/1', /vframe: unknown parameter "x"/],
    ])('%s is a 400 at parse', async (q, msg) => {
      const r = await get(`bunny.mp4?${q}`);
      expect(r.status).toBe(400);
      expect(json(r).error).toMatch(msg);
    });

    it('non-video input is a clean 4xx, and the server keeps serving', async () => {
      const text = await get('text.txt?vframe/jpg/offset/1');
      expect(text.status).toBe(400);
      expect(json(text).error).toMatch(/vframe: input: Invalid data/);
      expect(text.body.toString()).not.toContain(s.dataDir);
      const image = await get('photo.jpg?vframe/jpg/offset/5');
      expect(image.status).toBe(400);
      expect(json(image).error).toMatch(/past the end/);
      expect((await get('bunny.mp4?vframe/jpg/offset/1')).status).toBe(200);
    });

    it('runs as a persistent command through executeFops', async () => {
      const { bucket, rec } = await records('bunny.mp4');
      const out = await executeFops(s.running.g, bucket, rec, parsePipeline('vframe/png/offset/2/w/100', 'persistent'));
      try {
        expect('file' in out.result).toBe(true);
        if (!('file' in out.result)) return;
        expect(out.result.contentType).toBe('image/png');
        const m = await sharp(out.result.file).metadata();
        expect([m.format, m.width, m.height]).toEqual(['png', 100, 56]);
      } finally {
        await out.dispose();
      }
    });
  });

  describe('avthumb', () => {
    it('is refused on a download URL (persistent only)', async () => {
      const r = await get('bunny.mp4?avthumb/mp4');
      expect(r.status).toBe(400);
      expect(json(r).error).toMatch(/avthumb: runs only as a persistent command/);
    });

    it('transcodes to 320x180 H.264 with a same-bucket image watermark (executeFops)', async () => {
      const { bucket, rec } = await records('bunny.mp4');
      const wm = b64(`${s.url}/${BUCKET}/red.png`);
      const stages = parsePipeline(`avthumb/mp4/s/320x180/wmImage/${wm}/wmText/${b64("Granary: 'a,b;[c]' %{pts}")}/wmGravityText/SouthWest`, 'persistent');
      const out = await executeFops(s.running.g, bucket, rec, stages, { timeoutSeconds: 600 });
      try {
        if (!('file' in out.result)) throw new Error('avthumb did not produce a file');
        expect(out.result.contentType).toBe('video/mp4');
        const info = await ffprobe(out.result.file);
        const v = info.streams.find((st) => st.codec_type === 'video') as Json;
        const a = info.streams.find((st) => st.codec_type === 'audio') as Json;
        expect([v.codec_name, v.width, v.height, v.pix_fmt]).toEqual(['h264', 320, 180, 'yuv420p']);
        expect(a.codec_name).toBe('aac');
        expect(Math.abs(Number(info.format.duration) - Number(reference.format.duration))).toBeLessThan(0.5);
        // The red watermark sits 10 px from the top-right corner (default gravity NorthEast).
        const { stdout } = await run('ffmpeg', ['-v', 'error', '-ss', '3', '-i', out.result.file, '-frames:v', '1', '-f', 'image2pipe', '-c:v', 'png', '-'], {
          encoding: 'buffer',
        });
        const patch = await sharp(stdout).extract({ left: 320 - 10 - 30, top: 15, width: 10, height: 10 }).raw().toBuffer();
        const [r, g, b] = [patch[0] as number, patch[1] as number, patch[2] as number];
        expect(r).toBeGreaterThan(200);
        expect(g).toBeLessThan(60);
        expect(b).toBeLessThan(60);
      } finally {
        await out.dispose();
      }
    }, 300_000);

    it('audio-only formats, ss and t', async () => {
      const { bucket, rec } = await records('bunny.mp4');
      const out = await executeFops(s.running.g, bucket, rec, parsePipeline('avthumb/mp3/ab/64k/ar/22050/ss/10/t/4', 'persistent'), { timeoutSeconds: 120 });
      try {
        if (!('file' in out.result)) throw new Error('avthumb did not produce a file');
        expect(out.result.contentType).toBe('audio/mpeg');
        const info = await ffprobe(out.result.file);
        expect(info.streams).toHaveLength(1);
        expect(info.streams[0]).toMatchObject({ codec_type: 'audio', codec_name: 'mp3', sample_rate: '22050' });
        expect(Math.abs(Number(info.format.duration) - 4)).toBeLessThan(0.2);
      } finally {
        await out.dispose();
      }
    }, 120_000);

    it('chains: an audio-only stage then vframe is a 400 naming the missing video stream; vframe then imageView2 works', async () => {
      const { bucket, rec } = await records('bunny.mp4');
      const err = await executeFops(s.running.g, bucket, rec, parsePipeline('avthumb/m4a/t/3|vframe/jpg/offset/1', 'persistent'), { timeoutSeconds: 120 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isKodoError(err) && err.status).toBe(400);
      expect((err as Error).message).toMatch(/vframe: the source has no video stream/);
      const r = await get('bunny.mp4?vframe/jpg/offset/5|imageView2/2/w/64');
      expect(r.status, r.body.toString()).toBe(200);
      const m = await sharp(r.body).metadata();
      expect([m.format, m.width, m.height]).toEqual(['jpeg', 64, 36]);
    }, 120_000);

    it('a missing watermark entry is a 404 and nothing is encoded', async () => {
      const { bucket, rec } = await records('bunny.mp4');
      const stages = parsePipeline(`avthumb/mp4/wmImage/${b64(`${s.url}/${BUCKET}/nope.png`)}`, 'persistent');
      const err = await executeFops(s.running.g, bucket, rec, stages).then(() => undefined, (e: unknown) => e);
      expect(isKodoError(err) && err.status).toBe(404);
      expect(ffmpegChildren()).toBe(0);
    });

    it('the time limit kills ffmpeg', async () => {
      const { bucket, rec } = await records('bunny.mp4');
      const err = await executeFops(s.running.g, bucket, rec, parsePipeline('avthumb/webm/vb/5m', 'persistent'), { timeoutSeconds: 1 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isKodoError(err) && err.message).toMatch(/timed out/);
      const deadline = Date.now() + 5000;
      while (ffmpegChildren() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(ffmpegChildren()).toBe(0);
    });
  });

  describe('without ffmpeg', () => {
    let bare: TestServer;
    beforeAll(async () => {
      bare = await startTestServer({ GRANARY_FFMPEG: '/nonexistent/ffmpeg', GRANARY_VIDEO_MAX_SOURCE: '1000000' });
      await createBucket(bare, BUCKET);
      await upload(bare, BUCKET, 'bunny.mp4', await readFile(VIDEO));
      await upload(bare, BUCKET, 'photo.jpg', await readFile(join(FIXTURE_IMAGES, 'Canon_40D.jpg')));
    }, 60_000);
    afterAll(async () => bare.stop());

    it('vframe is a clear 415 naming GRANARY_FFMPEG; image fops and ffprobe still work', async () => {
      const r = await get('photo.jpg?vframe/jpg/offset/0', bare);
      expect(r.status).toBe(415);
      expect(json(r).error).toMatch(/vframe: ffmpeg is not available \(install the Debian package ffmpeg, or set GRANARY_FFMPEG/);
      const img = await get('photo.jpg?imageView2/2/w/50', bare);
      expect(img.status).toBe(200);
      expect((await sharp(img.body).metadata()).width).toBe(50);
      expect((await get('photo.jpg?avinfo', bare)).status).toBe(200);
    });

    it('a source above GRANARY_VIDEO_MAX_SOURCE is a 400', async () => {
      const r = await get('bunny.mp4?avinfo', bare);
      expect(r.status).toBe(400);
      expect(json(r).error).toMatch(/avinfo: source is 3926230 bytes, the limit is 1000000 \(GRANARY_VIDEO_MAX_SOURCE\)/);
    });
  });
});
