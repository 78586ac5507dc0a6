/**
 * S3 CORS configurations (s3api/cors-config.ts) and the rule matching both doors share (buckets/cors.ts): S3's
 * origin and header wildcards, exact round trips, refusals; and the S3 metadata value decoding
 * (object-headers.ts metaValue) and the signed-bytes candidates of non-ASCII header values (auth/signed-bytes.ts).
 */
import { describe, expect, it } from 'vitest';
import { findCorsRule } from '../../src/buckets/cors.js';
import { matchingRules, parseS3CorsConfiguration, s3CorsXml } from '../../src/s3api/cors-config.js';
import { signedBytesCandidates } from '../../src/s3api/auth/signed-bytes.js';
import { metaValue } from '../../src/s3api/object-headers.js';
import { parseXml } from '../../src/s3api/xml.js';

const config = (rules: string): string => `<CORSConfiguration>${rules}</CORSConfiguration>`;
const code = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe('S3 CORS configuration', () => {
  const xml = config(
    '<CORSRule><ID>a</ID><AllowedHeader>x-amz-*</AllowedHeader><AllowedMethod>PUT</AllowedMethod><AllowedOrigin>http://*.example.com</AllowedOrigin><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>30</MaxAgeSeconds></CORSRule>' +
      '<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*suffix</AllowedOrigin><AllowedOrigin>start*end</AllowedOrigin><AllowedOrigin>example.origin</AllowedOrigin></CORSRule>',
  );

  it('keeps the rules as sent and writes them back exactly', () => {
    const rules = parseS3CorsConfiguration(parseXml(xml));
    expect(rules[0]).toEqual({ id: 'a', allowedOrigin: ['http://*.example.com'], allowedMethod: ['PUT'], allowedHeader: ['x-amz-*'], exposeHeader: ['ETag'], maxAgeSeconds: 30 });
    expect(parseS3CorsConfiguration(parseXml(s3CorsXml(rules)))).toEqual(rules);
  });

  it('matches origins without scheme and with a wildcard anywhere, and header wildcards case-insensitively', () => {
    const rules = matchingRules(parseS3CorsConfiguration(parseXml(xml)));
    const match = (origin: string, method: string, headers: string[] = []) => rules.indexOf(findCorsRule(rules, { origin, method, headers })!);
    expect(match('foo.suffix', 'GET')).toBe(1);
    expect(match('start12end', 'GET')).toBe(1);
    expect(match('0start12end', 'GET')).toBe(-1);
    expect(match('example.origin', 'GET')).toBe(1);
    expect(match('http://app.example.com', 'PUT', ['x-amz-meta-a', 'x-amz-date'])).toBe(0);
    expect(match('http://app.example.com', 'PUT', ['content-type'])).toBe(-1);
    expect(match('https://app.example.com', 'PUT')).toBe(-1);
  });

  it('refuses what S3 refuses', () => {
    const one = (rule: string) => code(() => parseS3CorsConfiguration(parseXml(config(`<CORSRule>${rule}</CORSRule>`))));
    expect(one('<AllowedMethod>get</AllowedMethod><AllowedOrigin>*</AllowedOrigin>')).toBe('InvalidRequest');
    expect(one('<AllowedMethod>GET</AllowedMethod><AllowedOrigin>*.*</AllowedOrigin>')).toBe('InvalidRequest');
    expect(one('<AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin><AllowedHeader>a*b*</AllowedHeader>')).toBe('InvalidRequest');
    expect(one('<AllowedMethod>GET</AllowedMethod>')).toBe('MalformedXML');
    expect(one('<AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin><MaxAgeSeconds>-1</MaxAgeSeconds>')).toBe('MalformedXML');
    expect(code(() => parseS3CorsConfiguration(parseXml(config('<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule>'.repeat(101)))))).toBe('InvalidRequest');
  });
});

describe('non-ASCII header values', () => {
  it('metadata: UTF-8 bytes read as latin1 become their text; other bytes stay; RFC 2047 words are decoded', () => {
    const latin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    expect(metaValue(latin1('Hello World é 中文'))).toBe('Hello World é 中文');
    expect(metaValue('Montréal')).toBe('Montréal');
    expect(metaValue('=?UTF-8?B?5Lit5paH?=')).toBe('中文');
    expect(metaValue('=?utf-8?q?caf=C3=A9_au_lait?=')).toBe('café au lait');
    expect(metaValue('plain')).toBe('plain');
  });

  it('a canonical text is tried as its raw bytes first, then as UTF-8; ASCII has one form', () => {
    expect(signedBytesCandidates('abc')).toEqual([Buffer.from('abc')]);
    expect(signedBytesCandidates('é')).toEqual([Buffer.from([0xe9]), Buffer.from([0xc3, 0xa9])]);
    expect(signedBytesCandidates('中')).toEqual([Buffer.from('中', 'utf8')]);
  });
});
