/**
 * HLS packaging, private playlists, frame sampling and concatenation (docs/development/kodo-protocol.md §10.6):
 * `avthumb/m3u8` as pfop jobs through the official SDK, read back over HTTP by ffprobe/ffmpeg from Granary itself
 * (segments, AES-128 through a key URL), `pm3u8` on a private bucket, `vsample` and `avconcat`, and bad parameters.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveas, sdkPfop, signedPost, waitFinal } from '../helpers/pfop.js';
import { upload } from '../helpers/http.js';
import { SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const VIDEO = join(FIXTURE_IMAGES, '..', 'video', 'big_buck_bunny.mp4');
const PUB = 'hls';
const PRIV = 'hls-private';
const run = promisify(execFile);
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

/** ffprobe's duration (seconds) and stream types of a file or URL. */
async function probe(target: string, extra: string[] = []): Promise<{ duration: number; types: string[] }> {
  const { stdout } = await run('ffprobe', ['-v', 'error', ...extra, '-show_format', '-show_streams', '-of', 'json', target], { timeout: 30_000 });
  const j = JSON.parse(stdout) as { format: { duration: string }; streams: Array<{ codec_type: string }> };
  return { duration: Number(j.format.duration), types: j.streams.map((s) => s.codec_type) };
}

/** The segment URLs of a playlist text. */
const uris = (playlist: string): string[] => playlist.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

describe('HLS and multi-object video commands', () => {
  let s: TestServer;
  let sourceDuration: number;
  let work: string;

  const pfop = async (bucket: string, key: string, fop: string): Promise<Awaited<ReturnType<typeof waitFinal>>> => {
    const sub = await sdkPfop(s, bucket, key, [fop], '');
    expect(sub.status, JSON.stringify(sub.data)).toBe(200);
    return waitFinal(s, sub.data.persistentId as string, 60_000);
  };
  const privateUrl = (path: string, ttl = 3600): string => {
    const url = `${s.url}${path}${path.includes('?') ? '&' : '?'}e=${Math.floor(s.clock.nowMs() / 1000) + ttl}`;
    return `${url}&token=${s.mac.accessKey}:${qiniu.util.base64ToUrlSafe(qiniu.util.hmacSha1(url, SK))}`;
  };

  beforeAll(async () => {
    s = await startTestServer();
    work = await mkdtemp(join(tmpdir(), 'granary-hls-'));
    await createBucket(s, PUB);
    await createBucket(s, PRIV);
    expect((await signedPost(s, '/private', `bucket=${PRIV}&private=1`)).status).toBe(200);
    // The first 20 s of the fixture (stream copy), so that whole-video packaging takes seconds.
    const clip = join(work, 'clip.mp4');
    await run('ffmpeg', ['-v', 'error', '-i', VIDEO, '-t', '20', '-c', 'copy', '-movflags', '+faststart', '-y', clip]);
    const video = await readFile(clip);
    await upload(s, PUB, 'bunny.mp4', video);
    await upload(s, PRIV, 'bunny.mp4', video);
    sourceDuration = (await probe(clip)).duration;
  }, 60_000);
  afterAll(async () => {
    await s.stop();
    await rm(work, { recursive: true, force: true });
  });

  describe('pm3u8', () => {
    it("signs the segment URLs of a private bucket's playlist: signed ones answer 200, unsigned ones 401", async () => {
      const final = await pfop(PRIV, 'bunny.mp4', `avthumb/m3u8/t/8/segtime/4/s/160x120|${saveas(PRIV, 'v/play.m3u8')}`);
      expect(final.code, JSON.stringify(final)).toBe(0);
      expect((await fetch(`${s.url}/${PRIV}/v/play.m3u8`)).status).toBe(401);
      const plain = await (await fetch(privateUrl(`/${PRIV}/v/play.m3u8`))).text();
      const unsigned = uris(plain);
      expect(unsigned.length).toBeGreaterThanOrEqual(2);
      for (const u of unsigned) expect((await fetch(u)).status, u).toBe(401);
      const res = await fetch(privateUrl(`/${PRIV}/v/play.m3u8?pm3u8/0/expires/600`));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-mpegurl');
      const signedList = uris(await res.text());
      expect(signedList.map((u) => u.split('?')[0])).toEqual(unsigned);
      for (const u of signedList) {
        expect(u).toMatch(/\?e=\d+&token=test-access-key:/);
        expect((await fetch(u, { method: 'HEAD' })).status, u).toBe(200);
      }
      // ffprobe plays the rewritten playlist through the signed URLs.
      const got = await probe(privateUrl(`/${PRIV}/v/play.m3u8?pm3u8/0`), ['-allowed_extensions', 'ALL']);
      expect(Math.abs(got.duration - 8)).toBeLessThan(1);
      const expired = uris(await (await fetch(privateUrl(`/${PRIV}/v/play.m3u8?pm3u8/0/deadline/1000`))).text());
      expect((await fetch(expired[0] as string)).status).toBe(401);
      expect((await fetch(privateUrl(`/${PRIV}/v/play.m3u8?pm3u8/1`))).status).toBe(400);
      expect((await fetch(privateUrl(`/${PRIV}/bunny.mp4?pm3u8/0`))).status).toBe(400);
    }, 60_000);
  });

  describe('vsample', () => {
    it('stores one frame per interval under the pattern; the item lists them', async () => {
      const pattern = b64('frames/f-$(count).jpg');
      const final = await pfop(PUB, 'bunny.mp4', `vsample/jpg/ss/3/t/10/s/160x/interval/2/savePattern/${pattern}`);
      expect(final.code, JSON.stringify(final)).toBe(0);
      const keys = ['000000', '000001', '000002', '000003', '000004'].map((n) => `frames/f-${n}.jpg`);
      expect(final.items[0]).toMatchObject({ code: 0, key: keys[0], keys });
      for (const k of keys) {
        const r = await fetch(`${s.url}/${PUB}/${k}?imageInfo`);
        expect(r.status, k).toBe(200);
        expect(await r.json()).toMatchObject({ format: 'jpeg', width: 160 });
      }
      expect((await fetch(`${s.url}/${PUB}/frames/f-000005.jpg`)).status).toBe(404);
    }, 60_000);

    it('refuses bad parameters and the download URL form', async () => {
      for (const [fop, msg] of [
        ['vsample/gif/interval/1', /format must be jpg or png/],
        ['vsample/jpg/interval/0.05', /interval must be at least 0.1/],
        ['vsample/jpg/frames/10', /frames is not supported/],
        [`vsample/jpg/pattern/${b64('$(key)-$(count)')}`, /only the variable \$\(count\)/],
      ] as const) {
        const sub = await sdkPfop(s, PUB, 'bunny.mp4', [fop], '');
        expect(sub.status, fop).toBe(400);
        expect(sub.data.error, fop).toMatch(msg);
      }
      expect((await fetch(`${s.url}/${PUB}/bunny.mp4?vsample/jpg/interval/1`)).status).toBe(400);
    });
  });

  describe('avconcat', () => {
    it('joins the source with other entries of its bucket (private too): the duration is the sum', async () => {
      await run('ffmpeg', ['-v', 'error', '-i', VIDEO, '-t', '2', '-vf', 'scale=320:180', '-c:v', 'libx264', '-preset', 'ultrafast', '-an', '-y', join(work, 'a.mp4')]);
      await run('ffmpeg', ['-v', 'error', '-ss', '10', '-i', VIDEO, '-t', '3', '-vf', 'scale=160:90', '-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'aac', '-y', join(work, 'b.mp4')]);
      await upload(s, PRIV, 'parts/a.mp4', await readFile(join(work, 'a.mp4')));
      await upload(s, PRIV, 'parts/b.mp4', await readFile(join(work, 'b.mp4')));
      const b = b64(`${s.url}/${PRIV}/parts/b.mp4`);
      const final = await pfop(PRIV, 'parts/a.mp4', `avconcat/2/format/mp4/s/320x180/${b}/${b64(`kodo://${PRIV}/parts/b.mp4`)}|${saveas(PRIV, 'joined.mp4')}`);
      expect(final.code, JSON.stringify(final)).toBe(0);
      const got = await probe(privateUrl(`/${PRIV}/joined.mp4`));
      expect(Math.abs(got.duration - 8)).toBeLessThan(0.5);
      expect(got.types).toEqual(expect.arrayContaining(['video', 'audio'])); // silence added for a.mp4
    }, 60_000);

    it('refuses other buckets, other hosts and bad parameters', async () => {
      for (const [fop, status, msg] of [
        [`avconcat/2/format/mp4/${b64(`kodo://${PUB}/bunny.mp4`)}`, 3, /only entries of the source's bucket/],
        [`avconcat/2/format/mp4/${b64('http://169.254.169.254/latest/meta-data')}`, 3, /names no entry of bucket/],
        ['avconcat/3/format/mp4/aHR0cDovL3g', 400, /mode must be 1 or 2/],
        [`avconcat/1/format/mp4/s/320x180/${b64(`kodo://${PRIV}/parts/b.mp4`)}`, 400, /s and addAudio need mode 2/],
        ['avconcat/2/format/mkv/aHR0cDovL3g', 400, /unsupported format "mkv"/],
        ['avconcat/2/format/mp4', 400, /at least one resource/],
      ] as const) {
        const sub = await sdkPfop(s, PRIV, 'bunny.mp4', [fop], '');
        if (status === 400) {
          expect(sub.status, fop).toBe(400);
          expect(sub.data.error, fop).toMatch(msg);
        } else {
          const final = await waitFinal(s, sub.data.persistentId as string, 30_000);
          expect(final.items[0]?.code, fop).toBe(3);
          expect(final.items[0]?.error, fop).toMatch(msg);
        }
      }
    }, 60_000);
  });

  describe('avthumb/m3u8', () => {
    it('packages the video: the playlist and every segment are served, ffprobe reads it back whole', async () => {
      const final = await pfop(PUB, 'bunny.mp4', `avthumb/m3u8/segtime/10/vcodec/libx264/s/320x240|${saveas(PUB, 'bunny.m3u8')}`);
      expect(final.code, JSON.stringify(final)).toBe(0);
      expect(final.items[0]).toMatchObject({ code: 0, key: 'bunny.m3u8', returnOld: 0 });
      const res = await fetch(`${s.url}/${PUB}/bunny.m3u8`);
      expect(res.status).toBe(200);
      const playlist = await res.text();
      expect(playlist).toMatch(/^#EXTM3U/);
      const segs = uris(playlist);
      expect(segs.length).toBeGreaterThanOrEqual(2);
      expect(segs[0]).toBe(`${s.url}/${PUB}/bunny/000000.ts`);
      for (const u of segs) expect((await fetch(u, { method: 'HEAD' })).status, u).toBe(200);
      const got = await probe(`${s.url}/${PUB}/bunny.m3u8`);
      expect(Math.abs(got.duration - sourceDuration)).toBeLessThan(1);
      expect(got.types).toEqual(expect.arrayContaining(['video', 'audio']));
    }, 90_000);

    it('encrypts with AES-128: the playlist names the key URL and ffmpeg decrypts through it', async () => {
      const key = Buffer.from('0123456789abcdef');
      await upload(s, PUB, 'keys/k1.key', key);
      const keyUrl = `${s.url}/${PUB}/keys/k1.key`;
      const fop = `avthumb/hls/t/6/segtime/2/s/160x120/hlsKey/${b64(key)}/hlsKeyType/0/hlsKeyUrl/${b64(keyUrl)}/noDomain/1|${saveas(PUB, 'enc/play.m3u8')}`;
      const final = await pfop(PUB, 'bunny.mp4', fop);
      expect(final.code, JSON.stringify(final)).toBe(0);
      const playlist = await (await fetch(`${s.url}/${PUB}/enc/play.m3u8`)).text();
      expect(playlist).toContain(`#EXT-X-KEY:METHOD=AES-128,URI="${keyUrl}"`);
      expect(uris(playlist)[0]).toBe('play/000000.ts'); // noDomain/1: relative to the playlist
      const seg = Buffer.from(await (await fetch(`${s.url}/${PUB}/enc/play/000000.ts`)).arrayBuffer());
      expect(seg[0]).not.toBe(0x47); // not a clear MPEG-TS packet
      const out = join(work, 'dec.ts');
      await run('ffmpeg', ['-v', 'error', '-allowed_extensions', 'ALL', '-i', `${s.url}/${PUB}/enc/play.m3u8`, '-c', 'copy', '-y', out], { timeout: 30_000 });
      const got = await probe(out);
      expect(Math.abs(got.duration - 6)).toBeLessThan(1);
      expect(got.types).toContain('video');
    }, 60_000);

    it('refuses bad parameters with 400 naming them, and the download URL form', async () => {
      for (const [fop, msg] of [
        ['avthumb/m3u8/segtime/1', /segtime must be between 2 and 120/],
        ['avthumb/m3u8/hlsKey/AAAA/hlsKeyUrl/aHR0cDovL3g', /hlsKey must be 16 bytes/],
        [`avthumb/m3u8/hlsKey/${b64('0123456789abcdef')}/hlsKeyType/1.0/hlsKeyUrl/aHR0cDovL3g`, /hlsKeyType "1.0" is not supported/],
        [`avthumb/m3u8/hlsKey/${b64('0123456789abcdef')}`, /hlsKey needs hlsKeyUrl/],
        [`avthumb/m3u8/noDomain/1/domain/${b64('cdn.example.com')}`, /domain cannot be combined with noDomain/],
        [`avthumb/m3u8/savePattern/${b64('seg.ts')}`, /must contain \$\(count\)/],
      ] as const) {
        const sub = await sdkPfop(s, PUB, 'bunny.mp4', [fop], '');
        expect(sub.status, fop).toBe(400);
        expect(sub.data.error, fop).toMatch(msg);
      }
      const r = await fetch(`${s.url}/${PUB}/bunny.mp4?avthumb/m3u8/segtime/10`);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toMatch(/persistent command \(pfop or persistentOps\)/);
    });
  });
});
