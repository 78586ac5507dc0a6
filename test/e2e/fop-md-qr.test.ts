/**
 * `md2html` and `qrcode` (docs/development/kodo-protocol.md §10.9) on download URLs and by pfop with saveas,
 * sources uploaded with the official SDK: Markdown renders headings, lists, links and tables; `<script>`,
 * `onerror=` and `javascript:` links are removed; mode 0 is a whole document with the stylesheet link, mode 1
 * the body's content; the HTML answer carries `Content-Security-Policy: sandbox`. QR codes are decoded back
 * (jsQR on sharp's raw pixels) to the resource's URL (mode 0) or its content (mode 1); level H gives a larger
 * image than L. Bad parameters answer 400.
 */
import jsQRModule from 'jsqr';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlsafeB64Encode } from '../../src/auth/base64.js';
import { saveas, sdkPfop, waitFinal } from '../helpers/pfop.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download } from '../helpers/upload.js';

const B = 'mdqr-src';
const OUT = 'mdqr-out';
const b64 = (s: string): string => urlsafeB64Encode(s);

const MARKDOWN = [
  '# Granary title',
  '',
  'Some *emphasis* and a [link](https://example.com/a?b=1).',
  '',
  '- one',
  '- two',
  '',
  '| a | b |',
  '|---|---|',
  '| 1 | 2 |',
  '',
  '<script>alert(1)</script>',
  '',
  '<img src="x.png" onerror="alert(2)">',
  '',
  '[bad](javascript:alert(3)) <a href="javascript:alert(4)">raw</a> <iframe src="https://evil.example"></iframe>',
  '',
].join('\n');

// jsqr is CommonJS whose typings declare only a default export: under NodeNext the import is the module object.
const jsQR = (jsQRModule as unknown as { default: typeof jsQRModule.default }).default;

/** The text a PNG QR code holds (jsQR on RGBA pixels), or undefined when none is found. */
async function decodeQr(png: Buffer): Promise<string | undefined> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.length), info.width, info.height)?.data;
}

describe('md2html and qrcode', () => {
  let s: TestServer;
  const put = async (bucket: string, key: string, body: Buffer): Promise<void> => {
    const token = s.uploadToken({ scope: `${bucket}:${key}` });
    const r = await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, body, new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
  };

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, B);
    await createBucket(s, OUT);
    await put(B, 'doc/readme.md', Buffer.from(MARKDOWN));
    await put(B, 'note.txt', Buffer.from('WIFI:S:granary;T:WPA;P:secret;;'));
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('md2html: a sanitised whole document (mode 0, default) with the stylesheet link, sandboxed', async () => {
    const css = 'https://cdn.example.com/style.css';
    const r = await fetch(`${s.url}/${B}/doc/readme.md?md2html/0/css/${b64(css)}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('content-security-policy')).toContain('sandbox');
    const html = await r.text();
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    expect(html).toContain('<title>readme.md</title>');
    expect(html).toContain(`<link rel="stylesheet" href="${css}">`);
    expect(html).toContain('<h1>Granary title</h1>');
    expect(html).toContain('<em>emphasis</em>');
    expect(html).toContain('<a href="https://example.com/a?b=1">link</a>');
    expect(html).toMatch(/<ul>\s*<li>one<\/li>\s*<li>two<\/li>\s*<\/ul>/);
    expect(html).toContain('<td>1</td>');
    expect(html).toContain('<img src="x.png"');
    for (const gone of ['<script', 'alert(1)', 'onerror', 'javascript:', '<iframe']) expect(html, gone).not.toContain(gone);
    const plain = await (await fetch(`${s.url}/${B}/doc/readme.md?md2html`)).text();
    expect(plain).toBe(html.replace(`<link rel="stylesheet" href="${css}">\n`, ''));
  });

  it('md2html/1: only the body content', async () => {
    const r = await fetch(`${s.url}/${B}/doc/readme.md?md2html/1`);
    expect(r.status).toBe(200);
    const html = await r.text();
    expect(html.startsWith('<h1>Granary title</h1>')).toBe(true);
    for (const gone of ['<html', '<head', '<body', '<script']) expect(html, gone).not.toContain(gone);
    expect(await (await fetch(`${s.url}/${B}/doc/readme.md?md2html/mode/1`)).text()).toBe(html);
  });

  it('qrcode: mode 0 holds the resource URL, mode 1 its content; level H is larger than L', async () => {
    const r0 = await fetch(`${s.url}/${B}/note.txt?qrcode`);
    expect(r0.status).toBe(200);
    expect(r0.headers.get('content-type')).toBe('image/png');
    const png0 = Buffer.from(await r0.arrayBuffer());
    expect(await decodeQr(png0)).toBe(`${s.url}/${B}/note.txt`);
    const other = Buffer.from(await (await fetch(`${s.url}/${B}/doc/readme.md?qrcode/0`)).arrayBuffer());
    expect(await decodeQr(other)).toBe(`${s.url}/${B}/doc/readme.md`);
    expect(other.equals(png0)).toBe(false);

    const r1 = await fetch(`${s.url}/${B}/note.txt?qrcode/1/level/M`);
    expect(r1.status).toBe(200);
    expect(await decodeQr(Buffer.from(await r1.arrayBuffer()))).toBe('WIFI:S:granary;T:WPA;P:secret;;');

    const size = async (fop: string): Promise<number> =>
      (await sharp(Buffer.from(await (await fetch(`${s.url}/${B}/note.txt?${fop}`)).arrayBuffer())).metadata()).width!;
    expect(await size('qrcode/0/level/H')).toBeGreaterThan(await size('qrcode/0/level/L'));
  });

  it('pfop with saveas: both commands store their outputs', async () => {
    const md = await sdkPfop(s, B, 'doc/readme.md', [`md2html/1|${saveas(OUT, 'readme.html')}`], '');
    const qr = await sdkPfop(s, B, 'note.txt', [`qrcode/1/level/Q|${saveas(OUT, 'note.png')}`], '');
    expect(md.status).toBe(200);
    expect(qr.status).toBe(200);
    const [mdRec, qrRec] = await Promise.all([waitFinal(s, md.data.persistentId!), waitFinal(s, qr.data.persistentId!)]);
    expect(mdRec.items[0]).toMatchObject({ code: 0, key: 'readme.html' });
    expect(qrRec.items[0]).toMatchObject({ code: 0, key: 'note.png' });
    const html = await download(s, OUT, 'readme.html');
    expect(html.body.toString()).toContain('<h1>Granary title</h1>');
    expect(html.body.toString()).not.toContain('<script');
    expect(await decodeQr((await download(s, OUT, 'note.png')).body)).toBe('WIFI:S:granary;T:WPA;P:secret;;');
  });

  it('bad parameters are 400 on download URLs and at pfop submission', async () => {
    for (const fop of ['md2html/2', 'md2html/0/css/%%%', `md2html/0/css/${b64('javascript:alert(1)')}`, 'md2html/0/color/red', 'qrcode/2', 'qrcode/0/level/X', 'qrcode/0/size/9']) {
      expect((await fetch(`${s.url}/${B}/doc/readme.md?${fop}`)).status, fop).toBe(400);
    }
    expect((await sdkPfop(s, B, 'note.txt', ['qrcode/0/level/Z'], '')).status).toBe(400);
    expect((await sdkPfop(s, B, 'doc/readme.md', ['md2html/3'], '')).status).toBe(400);
    // Content too long for a QR code (more than 2,953 bytes at level L).
    await put(B, 'big.txt', Buffer.alloc(4000, 'a'));
    expect((await fetch(`${s.url}/${B}/big.txt?qrcode/1`)).status).toBe(400);
    // A Markdown source beyond GRANARY_MD2HTML_MAX_SOURCE (default 1 MiB).
    await put(B, 'big.md', Buffer.alloc(1024 * 1024 + 1, 'a'));
    const tooBig = await fetch(`${s.url}/${B}/big.md?md2html`);
    expect(tooBig.status).toBe(400);
    expect(await tooBig.text()).toContain('GRANARY_MD2HTML_MAX_SOURCE');
  });
});
