/**
 * File commands (docs/development/kodo-protocol.md §10.9) through the official SDK: `mkzip/2` by pfop and
 * `mkzip/4` by persistentOps on the upload of its index file — unzipped by Info-ZIP `unzip` and compared byte
 * for byte, with a non-ASCII name, a private-bucket source, one missing URL (listed in error.txt) and GBK names;
 * incompressible files stored and the others deflated (zipinfo), files over 256 KiB streamed into the archive;
 * GRANARY_MKZIP_MAX_BYTES and GRANARY_MKZIP_MAX_FILES failing the command, nothing stored;
 * `qhash` on a download URL and by pfop against `openssl dgst`; `imageslim` smaller with luma SSIM ≥ 0.98 (ffmpeg's
 * ssim filter); a DOCX and an XLSX (minimal OOXML written here) converted by `yifangyun_preview` to PDFs whose
 * page count `pdfinfo` reads, and without LibreOffice a failure naming GRANARY_SOFFICE; bad parameters answer 400.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlsafeB64Encode } from '../../src/auth/base64.js';
import { saveas, sdkPfop, waitFinal } from '../helpers/pfop.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, FIXTURE_IMAGES } from '../helpers/upload.js';

const B = 'files-src';
const OUT = 'files-out';
const b64 = (s: string): string => urlsafeB64Encode(s);

/** A zip built in memory from `files` (name → content), for the OOXML fixtures. */
function zipOf(files: Record<string, string>): Promise<Buffer> {
  const z = new yazl.ZipFile();
  for (const [name, text] of Object.entries(files)) z.addBuffer(Buffer.from(text), name);
  z.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    z.outputStream.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
  });
}

const RELS = `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`;
const DOCX = {
  '[Content_Types].xml': `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
  '_rels/.rels': `${RELS}<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
  'word/document.xml': `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Granary page one</w:t></w:r></w:p><w:p><w:r><w:br w:type="page"/><w:t>Page two</w:t></w:r></w:p></w:body></w:document>`,
};
const XLSX = {
  '[Content_Types].xml': `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
  '_rels/.rels': `${RELS}<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
  'xl/workbook.xml': `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`,
  'xl/_rels/workbook.xml.rels': `${RELS}<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
  'xl/worksheets/sheet1.xml': `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>fsize</t></is></c><c r="B1"><v>42</v></c></row></sheetData></worksheet>`,
};

describe('file commands', () => {
  let s: TestServer;
  let dir: string;
  const files: Record<string, Buffer> = {
    'a.txt': Buffer.from('alpha\n'.repeat(1000)),
    '目录/数据.bin': Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 251)),
    // Incompressible bytes (stored, not deflated), a small one read whole and a large one streamed (> 256 KiB),
    // and a large text streamed (deflated).
    'random.bin': randomBytes(40_000),
    'big/random.bin': randomBytes(700_000),
    'big/text.txt': Buffer.from(Array.from({ length: 20_000 }, (_, i) => `line ${i}\n`).join('')),
  };

  const put = async (bucket: string, key: string, body: Buffer, policy: Record<string, unknown> = {}): Promise<{ persistentId?: string }> => {
    const token = s.uploadToken({ scope: `${bucket}:${key}`, ...policy });
    const r = await sdk<{ persistentId?: string }>(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, body, new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
    return r.data;
  };
  const urlOf = (key: string): string => `${s.url}/${B}/${key.split('/').map(encodeURIComponent).join('/')}`;
  /**
   * Downloads `OUT/key` and extracts it: with Info-ZIP `unzip`, or for GBK names (which Debian's unzip cannot
   * decode) with Python's zipfile told the names' encoding. Returns the extraction dir.
   */
  const unzipOut = async (key: string, gbk = false): Promise<string> => {
    const zip = await download(s, OUT, key);
    expect(zip.status).toBe(200);
    const path = join(dir, key);
    await writeFile(path, zip.body);
    const to = join(dir, `${key}.d`);
    if (!gbk) execFileSync('unzip', ['-q', '-d', to, path]);
    else execFileSync('python3', ['-c', "import sys, zipfile; zipfile.ZipFile(sys.argv[1], metadata_encoding='gbk').extractall(sys.argv[2])", path, to]);
    return to;
  };

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_VIDEO_CONCURRENCY: '2' });
    dir = await mkdtemp(join(tmpdir(), 'granary-files-'));
    await createBucket(s, B);
    await createBucket(s, OUT);
    // The sources sit in a private bucket: mkzip reads them from storage, no signed URL needed.
    expect((await sdk(s.bucketManager().putBucketAccessMode(B, { private: 1 }))).status).toBe(200);
    for (const [key, body] of Object.entries(files)) await put(B, key, body);
  });
  afterAll(async () => {
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('mkzip/2: the archive unzips to the same bytes, aliases and non-ASCII names kept, a missing URL listed in error.txt', async () => {
    const fops = `mkzip/2/url/${b64(urlOf('a.txt'))}/url/${b64(urlOf('目录/数据.bin'))}/alias/${b64('归档/数据.bin')}/url/${b64(urlOf('missing.txt'))}|${saveas(OUT, 'two.zip')}`;
    const sub = await sdkPfop(s, B, 'a.txt', [fops], '');
    expect(sub.status).toBe(200);
    const rec = await waitFinal(s, sub.data.persistentId!);
    expect(rec.items[0]).toMatchObject({ code: 0, key: 'two.zip' });
    const to = await unzipOut('two.zip');
    expect((await readFile(join(to, 'a.txt'))).equals(files['a.txt']!)).toBe(true);
    expect((await readFile(join(to, '归档/数据.bin'))).equals(files['目录/数据.bin']!)).toBe(true);
    const errors = await readFile(join(to, 'error.txt'), 'utf8');
    expect(errors).toContain(urlOf('missing.txt'));
    expect(errors).toMatch(/\t404 /);
  });

  it('mkzip: incompressible files are stored, the others deflated, small and large (streamed) alike; all unzip byte for byte', async () => {
    const names = ['a.txt', 'random.bin', 'big/random.bin', 'big/text.txt'];
    const fops = `mkzip/2${names.map((n) => `/url/${b64(urlOf(n))}`).join('')}|${saveas(OUT, 'mixed.zip')}`;
    const sub = await sdkPfop(s, B, 'a.txt', [fops], '');
    expect(sub.status).toBe(200);
    expect((await waitFinal(s, sub.data.persistentId!)).items[0]).toMatchObject({ code: 0, key: 'mixed.zip' });
    const to = await unzipOut('mixed.zip');
    for (const n of names) expect((await readFile(join(to, n))).equals(files[n]!), n).toBe(true);
    // zipinfo: one line per entry, the method (defN / stor) before the date, the name last.
    const methods = Object.fromEntries(
      execFileSync('zipinfo', [join(dir, 'mixed.zip')], { encoding: 'utf8' })
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f.length >= 9 && names.includes(f[f.length - 1]!))
        .map((f) => [f[f.length - 1]!, f[f.length - 4]!]),
    );
    expect(methods).toEqual({ 'a.txt': 'defN', 'random.bin': 'stor', 'big/random.bin': 'stor', 'big/text.txt': 'defN' });
  });

  it('mkzip/4 by persistentOps on the upload of its index file; encoding/gbk writes GBK names, not UTF-8', async () => {
    const index = [`/url/${b64(urlOf('a.txt'))}/alias/${b64('文本.txt')}`, '', `/url/${b64(urlOf('目录/数据.bin'))}`].join('\n');
    const ops = `mkzip/4/encoding/${b64('gbk')}|${saveas(OUT, 'four.zip')}`;
    const up = await put(B, 'index.txt', Buffer.from(index), { persistentOps: ops });
    const rec = await waitFinal(s, up.persistentId!);
    expect(rec.items[0]).toMatchObject({ code: 0, key: 'four.zip' });
    const raw = (await download(s, OUT, 'four.zip')).body;
    expect(raw.includes(Buffer.from('文本.txt'))).toBe(false); // not UTF-8 …
    expect(raw.includes(Buffer.from('cec4b1be2e747874', 'hex'))).toBe(true); // … but GBK
    const to = await unzipOut('four.zip', true);
    expect((await readFile(join(to, '文本.txt'))).equals(files['a.txt']!)).toBe(true);
    expect((await readFile(join(to, '目录/数据.bin'))).equals(files['目录/数据.bin']!)).toBe(true);
  });

  it('mkzip limits: GRANARY_MKZIP_MAX_BYTES (sizes known at open and a single larger file), GRANARY_MKZIP_MAX_FILES and GRANARY_JOB_TIMEOUT fail the command', async () => {
    const t = await startTestServer({ GRANARY_MKZIP_MAX_BYTES: '1000000', GRANARY_MKZIP_MAX_FILES: '3', GRANARY_JOB_TIMEOUT: '3', GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
    // An origin that sends the first third of its body, then nothing: 900,000 bytes (streamed into the archive)
    // or 150,000 (read whole ahead).
    const origin = createServer((req, res) => {
      const size = req.url === '/small.bin' ? 150_000 : 900_000;
      res.writeHead(200, { 'content-length': String(size) });
      res.write(randomBytes(size / 3));
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    try {
      await createBucket(t, B);
      const sources = { 'a.txt': files['a.txt']!, 'random.bin': files['random.bin']!, 'big/random.bin': files['big/random.bin']!, 'huge.bin': randomBytes(1_100_000) };
      for (const [key, body] of Object.entries(sources)) {
        const token = t.uploadToken({ scope: `${B}:${key}` });
        expect((await sdk(new qiniu.form_up.FormUploader(t.zoneConfig()).put(token, key, body, new qiniu.form_up.PutExtra()))).status).toBe(200);
      }
      const url = (key: string): string => `/url/${b64(`${t.url}/${B}/${key.split('/').map(encodeURIComponent).join('/')}`)}`;
      const run = async (keys: string[], out: string): Promise<unknown> => {
        const sub = await sdkPfop(t, B, 'a.txt', [`mkzip/2${keys.map(url).join('')}|${saveas(B, out)}`], '');
        expect(sub.status).toBe(200);
        return (await waitFinal(t, sub.data.persistentId!)).items[0];
      };
      // 6,000 + 40,000 bytes: within the limit.
      expect(await run(['a.txt', 'random.bin'], 'ok.zip')).toMatchObject({ code: 0 });
      // 700,000 + 40,000 + 700,000: the total passes 1,000,000 bytes (each size known when opened).
      expect(await run(['big/random.bin', 'random.bin', 'big/random.bin'], 'total.zip')).toMatchObject({ code: 3, error: expect.stringMatching(/GRANARY_MKZIP_MAX_BYTES/) });
      // One file of 1,100,000 bytes: over the limit by itself (refused when opened, never read).
      expect(await run(['huge.bin'], 'one.zip')).toMatchObject({ code: 3, error: expect.stringMatching(/GRANARY_MKZIP_MAX_BYTES/) });
      // The remote origin stalls mid-body: the command times out, nothing stored, and the stalled read is cut (the
      // command's slot is free for the next job: the GRANARY_MKZIP_MAX_FILES case below runs in it).
      const address = origin.address() as AddressInfo;
      for (const path of ['slow.bin', 'small.bin']) {
        const slow = await sdkPfop(t, B, 'a.txt', [`mkzip/2${url('a.txt')}/url/${b64(`http://127.0.0.1:${address.port}/${path}`)}|${saveas(B, 'slow.zip')}`], '');
        expect((await waitFinal(t, slow.data.persistentId!)).items[0], path).toMatchObject({ code: 3, error: expect.stringMatching(/timed out/) });
      }
      // Four URLs where three are allowed (counted when the job runs, as mode 4's index file is).
      expect(await run(['a.txt', 'a.txt', 'a.txt', 'a.txt'], 'many.zip')).toMatchObject({ code: 3, error: expect.stringMatching(/GRANARY_MKZIP_MAX_FILES/) });
      for (const out of ['total.zip', 'one.zip', 'slow.zip', 'many.zip']) expect((await download(t, B, out)).status).toBe(404);
    } finally {
      origin.closeAllConnections();
      origin.close();
      await t.stop();
    }
  });

  it('mkzip: bad parameters are 400 at submission; it runs only as a persistent command', async () => {
    for (const bad of ['mkzip/3', `mkzip/2/encoding/${b64('latin9')}/url/${b64(urlOf('a.txt'))}`, 'mkzip/2', `mkzip/2/url/${b64('ftp://x/y')}`, `mkzip/2/url/${b64(urlOf('a.txt'))}/alias/${b64('../up')}`]) {
      const r = await sdkPfop(s, B, 'a.txt', [bad], '');
      expect(r.status, bad).toBe(400);
      expect(r.data.error).toMatch(/mkzip: /);
    }
    const onUrl = await fetch(`${s.url}/${OUT}/two.zip?mkzip/2/url/${b64(urlOf('a.txt'))}`);
    expect(onUrl.status).toBe(400);
  });

  it('qhash: on a download URL and by pfop, equal to openssl dgst; bad algorithm 400', async () => {
    const path = join(dir, 'data.bin');
    await writeFile(path, files['目录/数据.bin']!);
    const openssl = (alg: string): string => /= ([0-9a-f]+)/.exec(execFileSync('openssl', ['dgst', `-${alg}`, path], { encoding: 'utf8' }))![1]!;
    await put(OUT, 'data.bin', files['目录/数据.bin']!);
    for (const alg of ['md5', 'sha1', 'sha256', 'sha512']) {
      const r = await fetch(`${s.url}/${OUT}/data.bin?qhash/${alg}`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ hash: openssl(alg), fsize: 70_000 });
    }
    const sub = await sdkPfop(s, OUT, 'data.bin', [`qhash/sha1|${saveas(OUT, 'data.sha1.json')}`], '');
    expect((await waitFinal(s, sub.data.persistentId!)).items[0]!.code).toBe(0);
    expect(JSON.parse((await download(s, OUT, 'data.sha1.json')).body.toString())).toEqual({ hash: openssl('sha1'), fsize: 70_000 });
    expect((await fetch(`${s.url}/${OUT}/data.bin?qhash/crc32`)).status).toBe(400);
  });

  it('imageslim: a smaller JPEG with luma SSIM ≥ 0.98; a PNG stays a PNG and is never larger', async () => {
    const photo = await readFile(join(FIXTURE_IMAGES, 'gps_DSCN0010.jpg')); // 640×480
    await put(OUT, 'photo.jpg', photo);
    const r = await fetch(`${s.url}/${OUT}/photo.jpg?imageslim`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/jpeg');
    const slim = Buffer.from(await r.arrayBuffer());
    expect(slim.length).toBeLessThan(photo.length);
    await writeFile(join(dir, 'orig.jpg'), photo);
    await writeFile(join(dir, 'slim.jpg'), slim);
    // SSIM of the luminance (what the eye sees of detail); ffmpeg prints the ssim filter's summary on stderr.
    const graph = '[0]format=gray[a];[1]format=gray[b];[a][b]ssim';
    const ssim = spawnSync('ffmpeg', ['-hide_banner', '-nostdin', '-i', join(dir, 'orig.jpg'), '-i', join(dir, 'slim.jpg'), '-lavfi', graph, '-f', 'null', '-'], { encoding: 'utf8' });
    const all = Number(/All:([\d.]+)/.exec(ssim.stderr)?.[1]);
    expect(all).toBeGreaterThanOrEqual(0.98);

    // A PNG stored without compression comes back smaller, still a PNG with the same pixels' size.
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#3a7' } }).png({ compressionLevel: 0 }).toBuffer();
    await put(OUT, 'flat.png', png);
    const p = await fetch(`${s.url}/${OUT}/flat.png?imageslim`);
    expect(p.headers.get('content-type')).toBe('image/png');
    const slimPng = Buffer.from(await p.arrayBuffer());
    expect(slimPng.length).toBeLessThan(png.length);
    expect(await sharp(slimPng).metadata()).toMatchObject({ format: 'png', width: 64, height: 64 });
  });

  it('yifangyun_preview: a DOCX and an XLSX become PDFs (pdfinfo counts the pages), in parallel runs', async () => {
    await put(B, 'report.docx', await zipOf(DOCX));
    await put(B, 'sheet.bin', await zipOf(XLSX));
    const [doc, xls] = await Promise.all([
      sdkPfop(s, B, 'report.docx', [`yifangyun_preview|${saveas(OUT, 'report.pdf')}`], ''),
      sdkPfop(s, B, 'sheet.bin', [`yifangyun_preview/v2/ext=xlsx|${saveas(OUT, 'sheet.pdf')}`], ''),
    ]);
    const recs = await Promise.all([waitFinal(s, doc.data.persistentId!, 60_000), waitFinal(s, xls.data.persistentId!, 60_000)]);
    expect(recs.map((r) => r.items[0]!.code)).toEqual([0, 0]);
    const pages = async (key: string): Promise<number> => {
      const pdf = await download(s, OUT, key);
      expect(pdf.headers.get('content-type')).toBe('application/pdf');
      await writeFile(join(dir, key), pdf.body);
      return Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [join(dir, key)], { encoding: 'utf8' }))?.[1]);
    };
    expect(await pages('report.pdf')).toBe(2);
    expect(await pages('sheet.pdf')).toBe(1);
    // A key without a document extension and no ext parameter: 400 when the job runs (item code 3).
    const noExt = await waitFinal(s, (await sdkPfop(s, B, 'sheet.bin', ['yifangyun_preview'], '')).data.persistentId!);
    expect(noExt.items[0]).toMatchObject({ code: 3 });
    expect(noExt.items[0]!.error).toMatch(/extension/);
    expect((await sdkPfop(s, B, 'report.docx', ['yifangyun_preview/ext=exe'], '')).status).toBe(400);
  }, 90_000);

  it('yifangyun_preview without LibreOffice: the item fails with the 415 message naming GRANARY_SOFFICE', async () => {
    const bare = await startTestServer({ GRANARY_SOFFICE: join(dir, 'no-such-soffice') });
    try {
      await createBucket(bare, B);
      const token = bare.uploadToken({ scope: `${B}:report.docx` });
      const up = await sdk(new qiniu.form_up.FormUploader(bare.zoneConfig()).put(token, 'report.docx', await zipOf(DOCX), new qiniu.form_up.PutExtra()));
      expect(up.status).toBe(200);
      const rec = await waitFinal(bare, (await sdkPfop(bare, B, 'report.docx', ['yifangyun_preview'], '')).data.persistentId!);
      expect(rec.items[0]).toMatchObject({ code: 3 });
      expect(rec.items[0]!.error).toMatch(/GRANARY_SOFFICE/);
    } finally {
      await bare.stop();
    }
  });
});
