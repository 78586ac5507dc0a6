/**
 * The sync saveas signature (docs/development/kodo-protocol.md §2.7): HMAC-SHA1 over `host + path + "?" + query` up to `/sign/`, no
 * scheme. The expected signatures are computed here with node:crypto, the way Qiniu's docs sample does.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifySaveasSign } from '../../src/auth/saveas-sign.js';
import { KodoError } from '../../src/errors.js';

const AK = 'ak';
const SK = 'sk';
const secretOf = (ak: string): string | undefined => (ak === AK ? SK : undefined);
const sign = (data: string, sk = SK): string => createHmac('sha1', sk).update(data).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
const HOST = 'dl.example.com';
const TARGET = '/photo.jpg?imageView2/2/w/100|saveas/YjprLmpwZw==';

function status(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KodoError);
    expect((err as KodoError).kind).toBe('badSaveasSign');
    return (err as KodoError).status;
  }
  return 200;
}

describe('verifySaveasSign', () => {
  it('accepts a signature over host + request-target without the scheme, with e/token after it', () => {
    const rawUrl = `${TARGET}/sign/${AK}:${sign(HOST + TARGET)}`;
    expect(verifySaveasSign({ rawUrl, headers: { host: HOST } }, secretOf)).toEqual({ accessKey: AK });
    expect(verifySaveasSign({ rawUrl: `${rawUrl}&e=1&token=x:y`, headers: { host: HOST } }, secretOf)).toEqual({ accessKey: AK });
  });

  it('accepts the X-Forwarded-Host a proxy passes, and `|` sent as %7C after signing', () => {
    const viaProxy = `${TARGET}/sign/${AK}:${sign(`public.example.com${TARGET}`)}`;
    expect(status(() => verifySaveasSign({ rawUrl: viaProxy, headers: { host: '10.0.0.1:9000', 'x-forwarded-host': 'public.example.com' } }, secretOf))).toBe(200);
    const encoded = `${TARGET.replace('|', '%7C')}/sign/${AK}:${sign(HOST + TARGET)}`;
    expect(status(() => verifySaveasSign({ rawUrl: encoded, headers: { host: HOST } }, secretOf))).toBe(200);
  });

  it('refuses (401) a signature with the scheme, another secret, another host, an unknown key or none', () => {
    const cases = [
      `${TARGET}/sign/${AK}:${sign(`http://${HOST}${TARGET}`)}`,
      `${TARGET}/sign/${AK}:${sign(HOST + TARGET, 'other')}`,
      `${TARGET}/sign/${AK}:${sign(`other.example.com${TARGET}`)}`,
      `${TARGET}/sign/nobody:${sign(HOST + TARGET)}`,
      `${TARGET}/sign/${AK}`,
      TARGET,
    ];
    for (const rawUrl of cases) expect(status(() => verifySaveasSign({ rawUrl, headers: { host: HOST } }, secretOf)), rawUrl).toBe(401);
  });
});
