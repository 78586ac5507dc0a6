/**
 * The pure rules of the bucket download settings: max-age parsing and Cache-Control, referer patterns and
 * decisions, CORS rule parsing and matching, original-protection decisions, and their bucketInfo fields.
 */
import { describe, expect, it } from 'vitest';
import {
  corsRulesToWire,
  findCorsRule,
  originMatches,
  parseCorsRules,
  parseCorsRulesJson,
  preflightHeaders,
  requestedHeaders,
  responseHeaders,
} from '../../src/buckets/cors.js';
import { cacheControl, DEFAULT_MAX_AGE, effectiveMaxAge, parseMaxAge } from '../../src/buckets/max-age.js';
import { checkOriginalAccess, isStyleOnly } from '../../src/buckets/protection.js';
import { checkReferer, parsePatterns, parseRefererSettings, patternMatches, refererApplies, refererRefusal } from '../../src/buckets/referer.js';
import { downloadSettingsInfo } from '../../src/buckets/settings-info.js';
import { isKodoError } from '../../src/errors.js';
import type { RefererSettings } from '../../src/ports/meta.js';

/** The error `fn` throws: a KodoError of `kind` whose message matches `msg`. */
function expectKodo(fn: () => unknown, kind: string, msg: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect(isKodoError(err), String(err)).toBe(true);
    if (!isKodoError(err)) return;
    expect(err.kind).toBe(kind);
    expect(err.message).toMatch(msg);
    return;
  }
  throw new Error('expected a KodoError');
}

describe('max-age', () => {
  it('parses integers as set (bucketInfo reports them); <= 0 serves the default; refuses the rest naming maxAge', () => {
    expect(parseMaxAge('3600')).toBe(3600);
    expect(parseMaxAge('0')).toBe(0);
    expect(parseMaxAge('-5')).toBe(-5);
    expect(parseMaxAge('-2147483648')).toBe(-2147483648);
    expect(parseMaxAge('2147483647')).toBe(2147483647);
    expect(effectiveMaxAge(0)).toBe(DEFAULT_MAX_AGE);
    expect(effectiveMaxAge(-5)).toBe(DEFAULT_MAX_AGE);
    expect(effectiveMaxAge(undefined)).toBe(DEFAULT_MAX_AGE);
    expect(effectiveMaxAge(60)).toBe(60);
    for (const bad of ['', 'abc', '1.5', '1e3', '2147483648', '-2147483649']) expectKodo(() => parseMaxAge(bad), 'badRequest', /maxAge/);
  });

  it('gives public buckets their max-age and private ones a private, deadline-capped one', () => {
    const now = 1_000_000;
    expect(cacheControl({ private: false, settings: {} }, now)).toBe('public, max-age=31536000');
    expect(cacheControl({ private: false, settings: { maxAge: 60 } }, now)).toBe('public, max-age=60');
    expect(cacheControl({ private: true, settings: {} }, now, now + 100)).toBe('private, max-age=0');
    expect(cacheControl({ private: true, settings: { maxAge: 60 } }, now, now + 100)).toBe('private, max-age=60');
    expect(cacheControl({ private: true, settings: { maxAge: 600 } }, now, now + 100)).toBe('private, max-age=100');
    expect(cacheControl({ private: true, settings: { maxAge: 600 } }, now)).toBe('private, max-age=0');
  });
});

describe('referer', () => {
  const white = (patterns: string[], allowEmpty = false): RefererSettings => ({ mode: 1, patterns, allowEmpty, sourceEnabled: true });
  const black = (patterns: string[], allowEmpty = false): RefererSettings => ({ mode: 2, patterns, allowEmpty, sourceEnabled: true });

  it('parses the wire parameters', () => {
    expect(parseRefererSettings({ mode: '0', norefer: '1', pattern: 'x', sourceEnabled: null })).toBeUndefined();
    expect(parseRefererSettings({ mode: '1', norefer: '1', pattern: 'A.com; *.b.com;;a.com', sourceEnabled: '1' })).toEqual({
      mode: 1,
      patterns: ['a.com', '*.b.com'],
      allowEmpty: true,
      sourceEnabled: true,
    });
    expect(parseRefererSettings({ mode: '2', norefer: null, pattern: '*', sourceEnabled: null })).toMatchObject({ mode: 2, allowEmpty: false, sourceEnabled: false });
    expectKodo(() => parseRefererSettings({ mode: '3', norefer: null, pattern: '*', sourceEnabled: null }), 'badRefererSettings', /mode/);
    expectKodo(() => parseRefererSettings({ mode: '1', norefer: 'yes', pattern: '*', sourceEnabled: null }), 'badRefererSettings', /norefer/);
    expectKodo(() => parseRefererSettings({ mode: '1', norefer: '0', pattern: '*', sourceEnabled: '2' }), 'badRefererSettings', /source_enabled/);
    expectKodo(() => parseRefererSettings({ mode: '1', norefer: '0', pattern: '', sourceEnabled: null }), 'badRefererSettings', /pattern/);
  });

  it('accepts *, *.domain, domain and :port rules only', () => {
    expect(parsePatterns('*;*.example.com;example.com;localhost;10.0.0.1:8080')).toHaveLength(5);
    for (const bad of ['http://a.com', 'a.*.com', '*a.com', 'a.com/path', 'a.com:99999', 'a b.com', '**']) {
      expectKodo(() => parsePatterns(bad), 'badRefererSettings', /pattern/);
    }
    expectKodo(() => parsePatterns(Array.from({ length: 101 }, (_, i) => `h${i}.com`).join(';')), 'badRefererSettings', /more than 100/);
  });

  it('matches hosts: *.domain is subdomains only, ports when the rule has one', () => {
    expect(patternMatches('*.example.com', 'a.example.com', '443')).toBe(true);
    expect(patternMatches('*.example.com', 'a.b.example.com', '443')).toBe(true);
    expect(patternMatches('*.example.com', 'example.com', '443')).toBe(false);
    expect(patternMatches('*.example.com', 'badexample.com', '443')).toBe(false);
    expect(patternMatches('example.com', 'example.com', '8080')).toBe(true);
    expect(patternMatches('example.com', 'www.example.com', '80')).toBe(false);
    expect(patternMatches('example.com:8080', 'example.com', '8080')).toBe(true);
    expect(patternMatches('example.com:8080', 'example.com', '80')).toBe(false);
  });

  it('decides white and black lists, empty Referers and non-URL Referers', () => {
    const wl = white(['example.com', '*.example.com']);
    expect(refererRefusal(wl, 'https://example.com/page')).toBeUndefined();
    expect(refererRefusal(wl, 'http://img.EXAMPLE.com:8080/x')).toBeUndefined();
    expect(refererRefusal(wl, 'https://evil.test/')).toMatch(/evil\.test is not in the white list/);
    expect(refererRefusal(wl, undefined)).toMatch(/without a Referer/);
    expect(refererRefusal(wl, '')).toMatch(/without a Referer/);
    expect(refererRefusal(white(['example.com'], true), undefined)).toBeUndefined();
    expect(refererRefusal(wl, 'not a url')).toMatch(/not in the white list/);
    expect(refererRefusal(white(['*']), 'not a url')).toBeUndefined();
    const bl = black(['evil.test']);
    expect(refererRefusal(bl, 'https://evil.test/x')).toMatch(/in the black list/);
    expect(refererRefusal(bl, 'https://good.test/x')).toBeUndefined();
    expect(refererRefusal(bl, undefined)).toMatch(/without a Referer/);
    expect(refererRefusal(black(['evil.test'], true), undefined)).toBeUndefined();
  });

  it('applies to CDN domains always, to the source station (path style, other domains) only with source_enabled', () => {
    const on = { settings: { referer: { ...white(['a.com']), sourceEnabled: false } } };
    expect(refererApplies(on, true)).toBe(true);
    expect(refererApplies(on, false)).toBe(false);
    expect(refererApplies({ settings: { referer: white(['a.com']) } }, false)).toBe(true);
    expect(refererApplies({ settings: {} }, true)).toBe(false);
    expectKodo(() => checkReferer(on, 'https://b.com/', true), 'refererRefused', /b\.com/);
    expect(() => checkReferer(on, 'https://b.com/', false)).not.toThrow();
  });
});

describe('CORS rules', () => {
  const rule = {
    allowed_origin: ['https://app.example.com', 'https://*.example.org'],
    allowed_method: ['get', 'HEAD'],
    allowed_header: ['X-Custom', 'range'],
    exposed_header: ['ETag', 'x-reqid'],
    max_age: 600,
  };

  it('parses Kodo JSON, normalising methods and dropping duplicates; round-trips to the wire', () => {
    const [r] = parseCorsRules([rule]);
    expect(r).toEqual({
      allowedOrigin: ['https://app.example.com', 'https://*.example.org'],
      allowedMethod: ['GET', 'HEAD'],
      allowedHeader: ['X-Custom', 'range'],
      exposedHeader: ['ETag', 'x-reqid'],
      maxAge: 600,
    });
    expect(corsRulesToWire(parseCorsRules([rule]))).toEqual([{ ...rule, allowed_method: ['GET', 'HEAD'] }]);
    expect(corsRulesToWire(parseCorsRules([{ allowed_origin: ['*'], allowed_method: ['GET'] }]))).toEqual([{ allowed_origin: ['*'], allowed_method: ['GET'] }]);
    expect(parseCorsRules([])).toEqual([]);
  });

  it('refuses malformed rules naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [{}, /body: must be a JSON array/],
      [[1], /rules\[0\]: must be an object/],
      [[{ allowed_method: ['GET'] }], /rules\[0\]\.allowed_origin: is required/],
      [[{ allowed_origin: [], allowed_method: ['GET'] }], /allowed_origin: must not be empty/],
      [[{ allowed_origin: ['example.com'], allowed_method: ['GET'] }], /allowed_origin\[0\].*scheme/],
      [[{ allowed_origin: ['*'], allowed_method: ['PATCH'] }], /allowed_method\[0\]/],
      [[{ allowed_origin: ['*'], allowed_method: ['*'] }], /allowed_method\[0\]/],
      [[{ allowed_origin: ['*'], allowed_method: 'GET' }], /allowed_method: must be an array/],
      [[{ allowed_origin: ['*'], allowed_method: ['GET'], allowed_header: ['bad header'] }], /allowed_header\[0\]/],
      [[{ allowed_origin: ['*'], allowed_method: ['GET'], exposed_header: ['*'] }], /exposed_header\[0\]/],
      [[{ allowed_origin: ['*'], allowed_method: ['GET'], max_age: -1 }], /max_age/],
      [[{ allowed_origin: ['*'], allowed_method: ['GET'], max_age: '60' }], /max_age/],
      [[{ allowed_origin: ['*'], allowed_method: ['GET'], allowed_origins: ['*'] }], /rules\[0\]\.allowed_origins: unknown field/],
      [Array.from({ length: 11 }, () => ({ allowed_origin: ['*'], allowed_method: ['GET'] })), /at most 10/],
    ];
    for (const [body, msg] of cases) expectKodo(() => parseCorsRules(body), 'badCorsRules', msg);
    expectKodo(() => parseCorsRulesJson('[{'), 'badCorsRules', /body: is not valid JSON/);
  });

  it('matches origins with one * wildcard, case-sensitively', () => {
    expect(originMatches('*', 'https://x.test')).toBe(true);
    expect(originMatches('https://*.example.org', 'https://a.b.example.org')).toBe(true);
    expect(originMatches('https://*.example.org', 'http://a.example.org')).toBe(false);
    expect(originMatches('https://*.example.org', 'https://example.org')).toBe(false);
    expect(originMatches('https://app.example.com', 'https://APP.example.com')).toBe(false);
    expect(originMatches('https://*.a.*', 'https://x.a.*')).toBe(true);
    expect(originMatches('https://*.a.*', 'https://x.a.com')).toBe(false);
  });

  it('finds the first rule allowing origin, method and every requested header', () => {
    const rules = parseCorsRules([rule, { allowed_origin: ['*'], allowed_method: ['PUT'], allowed_header: ['*'] }]);
    const ok = { origin: 'https://app.example.com', method: 'GET', headers: ['x-custom'] };
    expect(findCorsRule(rules, ok)).toBe(rules[0]);
    expect(findCorsRule(rules, { ...ok, origin: 'https://evil.test' })).toBeUndefined();
    expect(findCorsRule(rules, { ...ok, method: 'POST' })).toBeUndefined();
    expect(findCorsRule(rules, { ...ok, headers: ['x-custom', 'authorization'] })).toBeUndefined();
    expect(findCorsRule(rules, { origin: 'https://evil.test', method: 'put', headers: ['anything'] })).toBe(rules[1]);
    expect(requestedHeaders(' X-Custom , Range,, ')).toEqual(['x-custom', 'range']);
  });

  it('builds preflight and response headers', () => {
    const [r] = parseCorsRules([rule]);
    const req = { origin: 'https://app.example.com', method: 'GET', headers: ['x-custom'] };
    expect(preflightHeaders(r!, req)).toEqual({
      'access-control-allow-origin': 'https://app.example.com',
      'access-control-allow-methods': 'GET, HEAD',
      'access-control-allow-headers': 'x-custom',
      'access-control-max-age': '600',
    });
    expect(responseHeaders(r!, 'https://app.example.com')).toEqual({
      'access-control-allow-origin': 'https://app.example.com',
      'access-control-expose-headers': 'X-Log, X-Reqid, ETag',
    });
  });
});

describe('original protection', () => {
  it('lets only single styles through unless signed', () => {
    expect(isStyleOnly('style/thumb')).toBe(true);
    expect(isStyleOnly('style/thumb|imageInfo')).toBe(false);
    expect(isStyleOnly('imageView2/1/w/10')).toBe(false);
    expect(isStyleOnly(undefined)).toBe(false);
    const on = { settings: { protected: true } };
    expectKodo(() => checkOriginalAccess(on, { signed: false, styleOnly: false }), 'originalProtected', /style/);
    expect(() => checkOriginalAccess(on, { signed: true, styleOnly: false })).not.toThrow();
    expect(() => checkOriginalAccess(on, { signed: false, styleOnly: true })).not.toThrow();
    expect(() => checkOriginalAccess({ settings: {} }, { signed: false, styleOnly: false })).not.toThrow();
  });
});

describe('bucketInfo fields', () => {
  it('shows defaults, then each setting', () => {
    expect(downloadSettingsInfo({})).toEqual({
      protected: 0,
      max_age: 0,
      anti_leech_mode: 0,
      no_refer: false,
      source_enabled: false,
    });
    expect(
      downloadSettingsInfo({ protected: true, maxAge: 60, referer: { mode: 2, patterns: ['a.com'], allowEmpty: true, sourceEnabled: true } }),
    ).toEqual({ protected: 1, max_age: 60, anti_leech_mode: 2, refer_bl: ['a.com'], no_refer: true, source_enabled: true });
  });
});
