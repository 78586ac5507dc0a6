/**
 * The console's links (src/console/links.ts) and request rates (src/console/request-rates.ts): the Kodo API base a
 * browser can reach, signed download URLs that the private-download verifier accepts, upload tokens the upload-token
 * verifier accepts; the request counter summed by status class. Sessions: console-sessions.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { verifyPrivateDownload } from '../../src/auth/download-token.js';
import { verifyUploadToken } from '../../src/auth/upload-token.js';
import { downloadUrl, objectPath, publicBase, uploadToken } from '../../src/console/links.js';
import { isServerError, RequestRateSampler } from '../../src/console/request-rates.js';
import type { Granary } from '../../src/context.js';
import { AdjustableClock } from '../../src/ports/clock.js';

const clock = new AdjustableClock();
const secrets: Record<string, string> = { ak: 'sk' };
const secretOf = (k: string): string | undefined => secrets[k];
const g = (publicUrl?: string): Granary =>
  ({ config: publicUrl ? { publicUrl } : {}, publicUrl: publicUrl ?? 'http://127.0.0.1:9000', clock, secretOf }) as unknown as Granary;

describe('console links', () => {
  it('points at the Kodo API listener by the host name the browser used, unless GRANARY_PUBLIC_URL is set', () => {
    expect(publicBase(g(), 'storage.lan:9001')).toBe('http://storage.lan:9000');
    expect(publicBase(g(), '[::1]:9001')).toBe('http://[::1]:9000');
    expect(publicBase(g(), undefined)).toBe('http://127.0.0.1:9000');
    expect(publicBase(g('https://kodo.example.com'), 'storage.lan:9001')).toBe('https://kodo.example.com');
  });

  it('escapes each key segment and keeps the slashes', () => {
    expect(objectPath('b', 'dir/a b+c?.jpg')).toBe('/b/dir/a%20b%2Bc%3F.jpg');
  });

  it('signs private download URLs (with a fop) that the download verifier accepts until their deadline', () => {
    const { url, deadline } = downloadUrl(g(), 'ak', { bucket: 'b', key: 'dir/x y.jpg', fop: 'imageView2/1/w/96' }, { sign: true, seconds: 60, base: 'http://h:9000' });
    expect(url).toMatch(/^http:\/\/h:9000\/b\/dir\/x%20y\.jpg\?imageView2\/1\/w\/96&e=\d+&token=ak:/);
    const rawUrl = url.slice('http://h:9000'.length);
    const now = Math.floor(clock.nowMs() / 1000);
    expect(verifyPrivateDownload({ rawUrl, headers: { host: 'h:9000' } }, secretOf, now)).toEqual({ accessKey: 'ak' });
    expect(() => verifyPrivateDownload({ rawUrl, headers: { host: 'h:9000' } }, secretOf, deadline! + 1)).toThrow(/token out of date/);
    expect(downloadUrl(g(), 'ak', { bucket: 'b', key: 'k' }, { sign: false, seconds: 60, base: 'http://h' }).url).toBe('http://h/b/k');
  });

  it('mints upload tokens for a scope that the upload-token verifier accepts', () => {
    const token = uploadToken(g(), 'ak', 'b:k', 3600);
    const parsed = verifyUploadToken(token, secretOf);
    expect(parsed.accessKey).toBe('ak');
    expect(JSON.stringify(parsed)).toContain('"b:k"');
  });
});

describe('console request rates', () => {
  it('sums the request counter by status class: 5xx but 573 are server errors, Kodo 6xx/7xx are client errors', async () => {
    const values = [
      { value: 10, labels: { status: 200 } },
      { value: 2, labels: { status: '404' } },
      { value: 3, labels: { status: 612 } },
      { value: 1, labels: { status: 573 } },
      { value: 4, labels: { status: 599 } },
      { value: 5, labels: { status: 579 } },
    ];
    const sampler = new RequestRateSampler({ get: async () => ({ values }) });
    const r = await sampler.rates();
    expect(r.total).toEqual({ requests: 25, clientErrors: 6, serverErrors: 9 });
    expect(r.windowSeconds).toBe(0);
    expect(isServerError(500)).toBe(true);
    expect(isServerError(631)).toBe(false);
  });
});
