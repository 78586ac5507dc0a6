/**
 * Unit checks of metrics/operations.ts (role and operation labels), metrics/route.ts (the token check) and log.ts
 * (the GRANARY_LOG_FORMAT choice).
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger, resolveLogFormat } from '../../src/log.js';
import { labelsOf } from '../../src/metrics/operations.js';
import { KODO_ROUTES } from '../../src/routes/table.js';
import { checkMetricsToken } from '../../src/metrics/route.js';
import { isKodoError } from '../../src/errors.js';

/** `fn` throws a Kodo error of `status` whose message matches `msg`. */
function expectKodoError(fn: () => unknown, status: number, msg: RegExp): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(isKodoError(err) && err.status, String(err)).toBe(status);
  expect((err as Error).message).toMatch(msg);
}

/** A stream collecting what is written to it. */
function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

describe('role and operation labels', () => {
  it.each([
    ['/', 'up'],
    ['/mkblk/:blockSize', 'up'],
    ['/bput/:ctx/:offset', 'up'],
    ['/mkfile/*', 'up'],
    ['/buckets/:bucket/objects/:objectName/uploads/:uploadId/:partNumber', 'up'],
    ['/buckets/:bucket/objects/:objectName/uploads', 'up'],
    ['/*', 'io'],
    ['/fetch/*', 'io'],
    ['/prefetch/*', 'io'],
    ['/stat/*', 'rs'],
    ['/move/*', 'rs'],
    ['/delete/*', 'rs'],
    ['/chgm/*', 'rs'],
    ['/batch', 'rs'],
    ['/list', 'rsf'],
    ['/v2/list', 'rsf'],
    ['/pfop/', 'api'],
    ['/status/get/prefop', 'api'],
    ['/pipelines/:name', 'api'],
    ['/sisyphus/fetch', 'api'],
    ['/workflowTemplates/:name', 'api'],
    ['/mkbucketv3/:bucket/region/:region', 'uc'],
    ['/buckets', 'uc'],
    ['/v2/domains', 'uc'],
    ['/v4/query', 'uc'],
    ['/rules/add', 'uc'],
    ['/health/ready', 'health'],
  ])('%s → %s (from the route table)', (url, role) => {
    const entries = KODO_ROUTES.filter((e) => e.url === url);
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) expect(labelsOf(e)).toEqual({ role, operation: e.operation });
  });

  it('names the operation as the route table does (one label for GET and HEAD); no route → unmatched', () => {
    const op = (method: string, url: string) =>
      KODO_ROUTES.find((e) => e.url === url && (Array.isArray(e.method) ? e.method : [e.method]).includes(method as never))?.operation;
    expect(op('POST', '/mkblk/:blockSize')).toBe('up.mkblk');
    expect(op('HEAD', '/*')).toBe('io.download');
    expect(op('GET', '/stat/*')).toBe('rs.stat');
    expect(op('POST', '/stat/*')).toBe('rs.stat');
    expect(labelsOf(undefined)).toEqual({ role: 'unmatched', operation: 'unmatched' });
  });
});

describe('metrics token', () => {
  it('lets everything through when none is configured', () => {
    expect(() => checkMetricsToken(undefined, undefined)).not.toThrow();
  });

  it('accepts only `Bearer <token>`', () => {
    expect(() => checkMetricsToken('s3cret', 'Bearer s3cret')).not.toThrow();
    expect(() => checkMetricsToken('s3cret', 'bearer s3cret')).not.toThrow();
    expectKodoError(() => checkMetricsToken('s3cret', undefined), 401, /token not specified/);
    expectKodoError(() => checkMetricsToken('s3cret', 'Basic s3cret'), 401, /token not specified/);
    expectKodoError(() => checkMetricsToken('s3cret', 'Bearer s3cre'), 401, /bad token/);
    expectKodoError(() => checkMetricsToken('s3cret', 'Bearer s3cret2'), 401, /bad token/);
  });
});

describe('log format', () => {
  it('auto is pretty on a TTY and JSON otherwise; explicit choices win', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('GRANARY_LOG_FORMAT defaults to auto and refuses other values', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ GRANARY_LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ GRANARY_LOG_FORMAT: 'xml' })).toThrow(/GRANARY_LOG_FORMAT must be one of pretty, json, auto/);
  });

  it('writes one JSON object per line, or readable text with the level and fields', async () => {
    const json = sink();
    (await createLogger({ logLevel: 'info', logFormat: 'auto' }, { isTTY: false, destination: json.stream })).info({ reqId: 'r1' }, 'hello');
    const line = JSON.parse(json.text().trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 30, reqId: 'r1', msg: 'hello' });

    const text = sink();
    (await createLogger({ logLevel: 'info', logFormat: 'pretty' }, { isTTY: false, destination: text.stream })).info({ reqId: 'r2' }, 'hello');
    expect(text.text()).toMatch(/INFO.*hello/);
    expect(text.text()).toMatch(/^\[[\d:.]+\] INFO: hello {"reqId":"r2"}\n$/);
    expect(() => JSON.parse(text.text())).toThrow();
    expect(text.text()).not.toContain(String.fromCharCode(27)); // no colour escapes when not on a TTY
  });
});
