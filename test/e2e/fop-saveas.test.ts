/**
 * Sync saveas on download URLs (docs/development/kodo-protocol.md §2.7, §10.7): `?<fops>|saveas/<EncodedEntryURI>/sign/<AK>:<sign>` runs
 * the pipeline, stores the result at the entry (overwriting) and answers with it. The signature is computed here,
 * independently of the server, the way Qiniu's docs and SDK samples do: HMAC-SHA1 with the secret key over the URL
 * WITHOUT its scheme (`host + path + "?" + query`), URL-safe base64.
 */
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { upload } from '../helpers/http.js';
import { entry } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectAbsent, FIXTURE_IMAGES } from '../helpers/upload.js';

const PUB = 'saveas-src';
const PRIV = 'saveas-private';
const OUT = 'saveas-out';
const ALICE_BUCKET = 'saveas-alice';

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

interface Stat {
  hash: string;
  fsize: number;
  mimeType: string;
}

/**
 * Appends `|saveas/<entry>/sign/<ak>:<sign>` to `url` (which already carries the fops), signing like the Go and
 * Java samples of Qiniu's saveas docs: `u.Host + u.RequestURI()` of the URL ending in `|saveas/<entry>`.
 */
function signSaveas(url: string, encodedEntry: string, ak: string, sk: string): string {
  const unsigned = `${url}|saveas/${encodedEntry}`;
  const u = new URL(unsigned);
  const signed = u.host + u.pathname + u.search;
  const sign = createHmac('sha1', sk).update(signed).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
  return `${unsigned}/sign/${ak}:${sign}`;
}

async function get(url: string): Promise<Got> {
  const res = await fetch(url);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

describe('sync saveas', () => {
  let s: TestServer;
  let bm: qiniu.rs.BucketManager;
  let photo: Buffer;
  let alice: { accessKey: string; secretKey: string };

  const stat = async (bucket: string, key: string): Promise<{ status: number; data: Stat }> => sdk<Stat>(bm.stat(bucket, key));

  beforeAll(async () => {
    s = await startTestServer();
    bm = s.bucketManager();
    for (const b of [PUB, PRIV, OUT]) await createBucket(s, b);
    expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    photo = await readFile(join(FIXTURE_IMAGES, 'orientation_landscape_1.jpg'));
    await upload(s, PUB, 'photo.jpg', photo);
    await upload(s, PRIV, 'p.jpg', photo);
    alice = await s.running.g.keyIndex.create(0);
    const aliceBm = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(alice.accessKey, alice.secretKey), s.zoneConfig());
    expect((await sdk(aliceBm.createBucket(ALICE_BUCKET, { regionId: 'z0' }))).status).toBe(200);
  }, 60_000);
  afterAll(async () => s?.stop());

  it('imageView2|saveas answers the thumbnail and stores the same bytes at the entry', async () => {
    const url = signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/100`, entry(OUT, 'thumbs/photo-100.jpg'), AK, SK);
    const r = await get(url);
    expect(r.status, r.body.toString()).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/jpeg');
    expect(r.headers.get('cache-control')).toBe('no-store');
    const meta = await sharp(r.body).metadata();
    expect(meta.width).toBe(100);

    const st = await stat(OUT, 'thumbs/photo-100.jpg');
    expect(st.status).toBe(200);
    expect(st.data).toMatchObject({ hash: qetag(r.body), fsize: r.body.length, mimeType: 'image/jpeg' });
    expect(r.headers.get('etag')).toBe(`"${qetag(r.body)}"`);
    const d = await download(s, OUT, 'thumbs/photo-100.jpg');
    expect(d.body.equals(r.body)).toBe(true);
  });

  it('overwrites an existing object at the entry, also right after a plain (cached) request of the same pipeline', async () => {
    await upload(s, OUT, 'over.jpg', 'old content');
    const plain = await get(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/80`);
    expect(plain.status).toBe(200);
    const again = await get(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/80`);
    expect(again.headers.get('x-granary-cache')).toBe('hit');

    const r = await get(signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/80`, entry(OUT, 'over.jpg'), AK, SK));
    expect(r.status, r.body.toString()).toBe(200);
    expect(r.body.equals(plain.body)).toBe(true);
    const st = await stat(OUT, 'over.jpg');
    expect(st.data).toMatchObject({ hash: qetag(plain.body), mimeType: 'image/jpeg' });
  });

  it('imageInfo|saveas answers JSON and stores it as application/json', async () => {
    const r = await get(signSaveas(`${s.url}/${PUB}/photo.jpg?imageInfo`, entry(OUT, 'info.json'), AK, SK));
    expect(r.status, r.body.toString()).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const info = JSON.parse(r.body.toString()) as { format: string; width: number };
    expect(info.format).toBe('jpeg');
    const st = await stat(OUT, 'info.json');
    expect(st.data).toMatchObject({ mimeType: 'application/json', hash: qetag(r.body) });
    const d = await download(s, OUT, 'info.json');
    expect(JSON.parse(d.body.toString())).toEqual(info);
  });

  it('a wrong, missing or unknown-key signature is 401 and stores nothing', async () => {
    const good = signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/50`, entry(OUT, 'bad-sign.jpg'), AK, SK);
    const cases = [
      signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/50`, entry(OUT, 'bad-sign.jpg'), AK, 'not-the-secret'),
      // Signed for another size than the one requested.
      good.replace('/w/50', '/w/51'),
      // Signed with the scheme, like a private download token: not the saveas rule.
      (() => {
        const unsigned = `${s.url}/${PUB}/photo.jpg?imageView2/2/w/50|saveas/${entry(OUT, 'bad-sign.jpg')}`;
        const sign = qiniu.util.base64ToUrlSafe(qiniu.util.hmacSha1(unsigned, SK));
        return `${unsigned}/sign/${AK}:${sign}`;
      })(),
      `${s.url}/${PUB}/photo.jpg?imageView2/2/w/50|saveas/${entry(OUT, 'bad-sign.jpg')}`,
      good.replace(`/sign/${AK}:`, '/sign/nobody:'),
      good.replace(/\/sign\/.*$/, `/sign/${AK}`),
    ];
    for (const url of cases) {
      const r = await get(url);
      expect(r.status, url).toBe(401);
      expect(JSON.parse(r.body.toString())).toEqual({ error: expect.stringMatching(/saveas sign/) });
    }
    await expectAbsent(s, OUT, 'bad-sign.jpg');
  });

  it("another account's key may save into its own bucket but not into a bucket it does not own (403)", async () => {
    const denied = await get(signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/60`, entry(OUT, 'alice.jpg'), alice.accessKey, alice.secretKey));
    expect(denied.status, denied.body.toString()).toBe(403);
    expect(JSON.parse(denied.body.toString())).toEqual({ error: expect.stringMatching(/no permission/) });
    await expectAbsent(s, OUT, 'alice.jpg');

    const own = await get(signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/60`, entry(ALICE_BUCKET, 'a.jpg'), alice.accessKey, alice.secretKey));
    expect(own.status, own.body.toString()).toBe(200);
    expect((await stat(ALICE_BUCKET, 'a.jpg')).data.hash).toBe(qetag(own.body));
  });

  it('a private source needs its e/token besides the saveas sign', async () => {
    const withSaveas = signSaveas(`${s.url}/${PRIV}/p.jpg?imageView2/2/w/70`, entry(OUT, 'from-private.jpg'), AK, SK);
    const keyAndQuery = withSaveas.slice(`${s.url}/${PRIV}/`.length);
    const deadline = Math.floor(s.clock.nowMs() / 1000) + 3600;
    const privateUrl = bm.privateDownloadUrl(`${s.url}/${PRIV}`, keyAndQuery, deadline);
    // The SDK percent-encodes `|` after the saveas sign was computed over `|` (the case Qiniu's docs warn about):
    // the server accepts a signature over the text with `%7C` read as `|`.
    expect(privateUrl).toContain('%7Csaveas/');

    const noToken = await get(withSaveas);
    expect(noToken.status).toBe(401);
    await expectAbsent(s, OUT, 'from-private.jpg');

    const r = await get(privateUrl);
    expect(r.status, r.body.toString()).toBe(200);
    expect((await sharp(r.body).metadata()).width).toBe(70);
    expect((await stat(OUT, 'from-private.jpg')).data).toMatchObject({ hash: qetag(r.body), mimeType: 'image/jpeg' });
  });

  it('a bad EncodedEntryURI or bad saveas syntax is 400 and stores nothing', async () => {
    const base = `${s.url}/${PUB}/photo.jpg?imageView2/2/w/40`;
    const cases = [
      signSaveas(base, '!!not-base64!!', AK, SK),
      signSaveas(base, qiniu.util.urlsafeBase64Encode(OUT), AK, SK), // a bucket without a key
      signSaveas(base, `${entry(OUT, 'x.jpg')}/deleteAfterDays/zero`, AK, SK),
      signSaveas(`${s.url}/${PUB}/photo.jpg?`, entry(OUT, 'x.jpg'), AK, SK).replace('?|saveas', '?saveas'),
    ];
    for (const url of cases) {
      const r = await get(url);
      expect(r.status, url).toBe(400);
      expect(JSON.parse(r.body.toString())).toHaveProperty('error');
    }
    await expectAbsent(s, OUT, 'x.jpg');
    expect((await download(s, OUT, '')).status).toBe(404);
  });

  it('a failing pipeline stores nothing; deleteAfterDays is accepted inside the signed part', async () => {
    await upload(s, PUB, 'text.txt', 'not an image');
    const bad = await get(signSaveas(`${s.url}/${PUB}/text.txt?imageView2/2/w/40`, entry(OUT, 'fail.jpg'), AK, SK));
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    await expectAbsent(s, OUT, 'fail.jpg');

    const r = await get(signSaveas(`${s.url}/${PUB}/photo.jpg?imageView2/2/w/30`, `${entry(OUT, 'ttl.jpg')}/deleteAfterDays/7`, AK, SK));
    expect(r.status, r.body.toString()).toBe(200);
    const st = await sdk<Stat & { expiration?: number }>(bm.stat(OUT, 'ttl.jpg'));
    expect(st.data.hash).toBe(qetag(r.body));
    expect(st.data.expiration).toBeGreaterThan(Math.floor(s.clock.nowMs() / 1000) + 6 * 86400);
  });
});
