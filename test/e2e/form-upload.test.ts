/**
 * Form upload (docs/development/kodo-protocol.md §4) driven by the official SDK in both configurations of §1.3 (static Zone and
 * /v4/query discovery): buffers, streams and files of several kinds round-trip byte for byte, `hash` is the
 * qetag computed independently (test/helpers/etag.ts), and the response body follows §3.3/§3.4 (default body with
 * x: variables, returnBody with bare and quoted placeholders); metadata comes back as X-Qn-Meta-* headers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { FIXTURE_IMAGES, createBucket, expectStored, recordRequests } from '../helpers/upload.js';

const MiB = 1024 * 1024;

describe('the independent qetag helper', () => {
  it('matches the vectors of docs/development/kodo-protocol.md §7', () => {
    expect(qetag(Buffer.alloc(0))).toBe('Fto5o-5ea0sNMlW_75VgGJCv2AcJ');
    expect(qetag(Buffer.from('abc'))).toBe('FqmZPjZHBoFquj4lcXhQwmyc0Nid');
    expect(qetag(Buffer.alloc(4 * MiB + 10, 7))).toBe('lrStvm4Y3Hueha7WZO5cr_dSW_Dg');
  });
});

interface Sample {
  name: string;
  key: string;
  content: Buffer;
  /** Content-Type expected on download, when the sample pins one. */
  mime?: string;
}

let s: TestServer;
let workDir: string;
const samples: Sample[] = [];
/** name → path of a local file holding the sample (for putFile). */
const files = new Map<string, string>();

beforeAll(async () => {
  s = await startTestServer();
  workDir = await mkdtemp(join(tmpdir(), 'granary-form-'));
  const photoPath = join(FIXTURE_IMAGES, 'hdr_canon_hdr_YES.jpg');
  samples.push(
    { name: 'text', key: 'hello.txt', content: Buffer.from('hello, granary\n'.repeat(20)), mime: 'text/plain' },
    { name: 'photo', key: 'photo.jpg', content: await readFile(photoPath), mime: 'image/jpeg' },
    { name: 'empty', key: 'empty.bin', content: Buffer.alloc(0) },
    { name: '3 MiB', key: 'three.bin', content: randomBytes(3 * MiB) },
    { name: '5 MiB (two etag blocks)', key: 'five.bin', content: randomBytes(5 * MiB) },
  );
  for (const sample of samples) {
    const path = sample.name === 'photo' ? photoPath : join(workDir, sample.key);
    if (sample.name !== 'photo') await writeFile(path, sample.content);
    files.set(sample.name, path);
  }
  await createBucket(s, 'form-zone');
  await createBucket(s, 'form-discovery');
  await createBucket(s, 'bodies');
});

afterAll(async () => {
  await s?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

type Way = 'put' | 'putStream' | 'putFile';
const WAYS: Way[] = ['put', 'putStream', 'putFile'];
const CONFIGS = [
  { name: 'zone', config: () => s.zoneConfig() },
  { name: 'discovery', config: () => s.discoveryConfig() },
];

/** Uploads `sample` to `bucket` under `key` the given way. */
function upload(config: qiniu.conf.Config, way: Way, bucket: string, key: string, sample: Sample) {
  const up = new qiniu.form_up.FormUploader(config);
  const token = s.uploadToken({ scope: bucket });
  switch (way) {
    case 'put':
      return sdk<Record<string, unknown>>(up.put(token, key, sample.content, new qiniu.form_up.PutExtra()));
    case 'putStream': {
      // Several chunks, so the server sees a real stream rather than one write.
      const chunks: Buffer[] = [];
      for (let off = 0; off < sample.content.length; off += 256 * 1024) chunks.push(sample.content.subarray(off, off + 256 * 1024));
      return sdk<Record<string, unknown>>(up.putStream(token, key, Readable.from(chunks), new qiniu.form_up.PutExtra()));
    }
    case 'putFile':
      return sdk<Record<string, unknown>>(up.putFile(token, key, files.get(sample.name) ?? '', null));
  }
}

describe.each(CONFIGS)('form upload, $name configuration', ({ name, config }) => {
  const bucket = `form-${name}`;
  let log: ReturnType<typeof recordRequests>;
  beforeAll(() => {
    log = recordRequests(s);
  });
  afterAll(() => log.stop());

  for (const way of WAYS) {
    it(`${way}: text, photo, empty, 3 MiB and 5 MiB round-trip with the independent qetag`, async () => {
      const posts = log.seen.filter((l) => l === 'POST /').length;
      for (const sample of samples) {
        const key = `${way}/${sample.key}`;
        const r = await upload(config(), way, bucket, key, sample);
        expect(r.status, `${sample.name}: ${JSON.stringify(r.data)}`).toBe(200);
        expect(r.data).toEqual({ hash: qetag(sample.content), key });
        const d = await expectStored(s, bucket, key, sample.content);
        expect(d.headers.get('etag')).toBe(`"${qetag(sample.content)}"`);
        if (sample.mime) expect(d.headers.get('content-type')).toMatch(new RegExp(`^${sample.mime}`));
      }
      // One form POST per upload: no retries.
      expect(log.seen.filter((l) => l === 'POST /').length - posts).toBe(samples.length);
    });
  }

  it(name === 'discovery' ? 'found the up host through /v4/query' : 'never asked /v4/query', () => {
    const queries = log.seen.filter((l) => l.startsWith('GET /v4/query?'));
    if (name === 'discovery') expect(queries.some((q) => q.includes(`bucket=${bucket}`)), log.seen.join('\n')).toBe(true);
    else expect(queries).toEqual([]);
  });
});

describe('response bodies', () => {
  const up = () => new qiniu.form_up.FormUploader(s.zoneConfig());
  const content = Buffer.from('response body content');

  it('the default body carries every x: variable as a string', async () => {
    const extra = new qiniu.form_up.PutExtra('a.txt', { 'x:location': 'shanghai', 'x:price': '1500' });
    const r = await sdk(up().put(s.uploadToken({ scope: 'bodies' }), 'default.txt', content, extra));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ hash: qetag(content), key: 'default.txt', 'x:location': 'shanghai', 'x:price': '1500' });
  });

  it('returnBody with bare placeholders (the SDK integration-test form) renders JSON strings', async () => {
    const returnBody = '{"key":$(key),"hash":$(etag),"fname":$(fname),"var_1":$(x:var_1)}';
    const extra = new qiniu.form_up.PutExtra('a.txt', { 'x:var_1': 'val_1' });
    const r = await sdk(up().put(s.uploadToken({ scope: 'bodies', returnBody }), 'bare.txt', content, extra));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ key: 'bare.txt', hash: qetag(content), fname: 'a.txt', var_1: 'val_1' });
  });

  it('renders $(fsize) as a number, quoted placeholders as text, and escapes JSON specials', async () => {
    const returnBody =
      '{"size":$(fsize),"k":"k=$(key)","mime":$(mimeType),"bucket":"$(bucket)","tricky":$(x:tricky),' +
      '"inString":"<$(x:tricky)>","missing":$(x:missing),"missingQuoted":"[$(x:missing)]"}';
    const tricky = 'say "hi" \\ back\nslash';
    const extra = new qiniu.form_up.PutExtra('a.txt', { 'x:tricky': tricky }, 'text/plain');
    const key = 'dir/quoted "key".txt';
    const r = await sdk(up().put(s.uploadToken({ scope: 'bodies', returnBody }), key, content, extra));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({
      size: content.length,
      k: `k=${key}`,
      mime: 'text/plain',
      bucket: 'bodies',
      tricky,
      inString: `<${tricky}>`,
      missing: null,
      missingQuoted: '[]',
    });
  });

  it('$(fname) and $(ext) come from the file name putFile sends', async () => {
    const returnBody = '{"fname":$(fname),"ext":$(ext),"fprefix":$(fprefix),"fsize":$(fsize)}';
    const photo = join(FIXTURE_IMAGES, 'Canon_40D.jpg');
    const r = await sdk(up().putFile(s.uploadToken({ scope: 'bodies', returnBody }), 'canon', photo, null));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ fname: 'Canon_40D.jpg', ext: '.jpg', fprefix: 'Canon_40D', fsize: (await readFile(photo)).length });
  });

  it('file names with quotes and line breaks survive the SDK\'s %22/%0D/%0A escaping', async () => {
    const fname = 'say "hi"\r\nagain.txt';
    const extra = new qiniu.form_up.PutExtra(fname);
    const r = await sdk(up().put(s.uploadToken({ scope: 'bodies', returnBody: '{"fname":$(fname)}' }), 'fname.txt', content, extra));
    expect(r).toEqual({ status: 200, data: { fname } });
  });

  it('metadata sent as x-qn-meta-* comes back as X-Qn-Meta-* headers on download', async () => {
    const extra = new qiniu.form_up.PutExtra('m.txt', {}, 'text/plain', undefined, undefined, {
      'x-qn-meta-color': 'red',
      'x-qn-meta-Owner': 'alice',
    });
    const r = await sdk(up().put(s.uploadToken({ scope: 'bodies' }), 'meta.txt', content, extra));
    expect(r.status).toBe(200);
    // Metadata does not leak into the response body.
    expect(r.data).toEqual({ hash: qetag(content), key: 'meta.txt' });
    const d = await expectStored(s, 'bodies', 'meta.txt', content);
    expect(d.headers.get('x-qn-meta-color')).toBe('red');
    expect(d.headers.get('x-qn-meta-owner')).toBe('alice');
    expect(d.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  it('a client MIME type other than octet-stream is stored as given', async () => {
    const extra = new qiniu.form_up.PutExtra('x.bin', {}, 'application/x-granary-test');
    const r = await sdk(up().put(s.uploadToken({ scope: 'bodies' }), 'typed.bin', content, extra));
    expect(r.status).toBe(200);
    const d = await expectStored(s, 'bodies', 'typed.bin', content);
    expect(d.headers.get('content-type')).toBe('application/x-granary-test');
  });
});
