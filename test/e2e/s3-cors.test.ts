/**
 * CORS on the S3 listener: preflights (`OPTIONS`) answered from the bucket's rules (set through PutBucketCors),
 * never authenticated (a presigned URL's query signs the actual request, not the preflight), and the rules'
 * headers on actual answers, errors included — checked on the wire, then from a page in Chromium on another
 * origin: a presigned PUT and a GET reading the exposed ETag through `fetch`, and a real HTML form POST (POST
 * Object with a signed policy) redirected back to the page's origin.
 */
import { createHmac } from 'node:crypto';
import { GetObjectCommand, PutBucketCorsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, startPageServer, type PageServer } from '../helpers/browser.js';
import { scrape, total } from '../helpers/metrics.js';
import { amzDate, errorCode, rawRequest, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const bucket = 's3-cors';
const bare = 's3-cors-none';
let s: TestServer;
let s3: ReturnType<typeof s3Client>;
let page: PageServer;
let browser: Browser;

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
  await createBucket(s, bucket);
  await createBucket(s, bare);
  page = await startPageServer();
  browser = await launchChromium();
  await s3.send(
    new PutBucketCorsCommand({
      Bucket: bucket,
      CORSConfiguration: {
        CORSRules: [
          { AllowedOrigins: [page.origin], AllowedMethods: ['GET', 'PUT', 'POST', 'HEAD'], AllowedHeaders: ['*'], ExposeHeaders: ['ETag'], MaxAgeSeconds: 600 },
          { AllowedOrigins: ['https://*.example.com'], AllowedMethods: ['GET'], AllowedHeaders: ['range'] },
        ],
      },
    }),
  );
});

afterAll(async () => {
  s3?.destroy();
  await browser?.close();
  await page?.close();
  await s?.stop();
});

/** An unsigned OPTIONS of `path` with these headers. */
const options = (path: string, headers: Record<string, string>) => rawRequest(s.s3Url!, 'OPTIONS', path, headers);

describe('preflights on the wire', () => {
  it('answer a matching rule with its headers, 200 and no body', async () => {
    const a = await options(`/${bucket}/photo.jpg`, { origin: page.origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type, x-amz-meta-a' });
    expect(a.status).toBe(200);
    expect(a.body).toBe('');
    expect(a.headers['access-control-allow-origin']).toBe(page.origin);
    expect(a.headers['access-control-allow-methods']).toBe('GET, PUT, POST, HEAD');
    expect(a.headers['access-control-allow-headers']).toBe('content-type, x-amz-meta-a');
    expect(a.headers['access-control-expose-headers']).toBe('ETag');
    expect(a.headers['access-control-max-age']).toBe('600');
    expect(a.headers['access-control-allow-credentials']).toBe('true');
    expect(a.headers.vary).toContain('Origin');
    expect(a.headers['x-amz-request-id']).toBeTruthy();
  });

  it('match wildcard origins and refuse what no rule allows (403 AccessForbidden)', async () => {
    const ok = await options(`/${bucket}/a`, { origin: 'https://cdn.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'range' });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('https://cdn.example.com');
    const refused: Record<string, string>[] = [
      { origin: 'https://cdn.example.com', 'access-control-request-method': 'PUT' },
      { origin: 'https://cdn.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-amz-meta-a' },
      { origin: 'http://elsewhere.test', 'access-control-request-method': 'GET' },
    ];
    for (const headers of refused) {
      const no = await options(`/${bucket}/a`, headers);
      expect(no.status).toBe(403);
      expect(errorCode(no)).toBe('AccessForbidden');
      expect(no.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('refuse a bucket without rules, a missing Origin or method, and name a missing bucket', async () => {
    const none = await options(`/${bare}/a`, { origin: page.origin, 'access-control-request-method': 'GET' });
    expect([none.status, errorCode(none)]).toEqual([403, 'AccessForbidden']);
    expect(none.body).toContain('CORS is not enabled for this bucket');
    const noOrigin = await options(`/${bucket}/a`, { 'access-control-request-method': 'GET' });
    expect([noOrigin.status, errorCode(noOrigin)]).toEqual([400, 'BadRequest']);
    const noMethod = await options(`/${bucket}/a`, { origin: page.origin });
    expect([noMethod.status, errorCode(noMethod)]).toEqual([400, 'BadRequest']);
    const missing = await options('/no-such-bucket-here/a', { origin: page.origin, 'access-control-request-method': 'GET' });
    expect([missing.status, errorCode(missing)]).toEqual([404, 'NoSuchBucket']);
  });

  it('are not authenticated: a preflight of a presigned URL or a multipart call is answered from the rules', async () => {
    const url = new URL(await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: 'p.bin' }), { expiresIn: 300 }));
    url.searchParams.set('X-Amz-Signature', '0'.repeat(64));
    const a = await options(`${url.pathname}${url.search}`, { origin: page.origin, 'access-control-request-method': 'PUT' });
    expect(a.status).toBe(200);
    const b = await options(`/${bucket}/big.bin?uploadId=abc&partNumber=2`, { origin: page.origin, 'access-control-request-method': 'PUT' });
    expect(b.status).toBe(200);
  });

  it('add the rule\'s headers to actual answers with an Origin, errors included, and nothing without one', async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'seen.txt', Body: 'hello' }));
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'seen.txt' }), { expiresIn: 300 });
    const got = await fetch(url, { headers: { origin: page.origin } });
    expect(got.status).toBe(200);
    expect(got.headers.get('access-control-allow-origin')).toBe(page.origin);
    expect(got.headers.get('access-control-expose-headers')).toBe('ETag');
    const missingUrl = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'absent.txt' }), { expiresIn: 300 });
    const missing = await fetch(missingUrl, { headers: { origin: page.origin } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe(page.origin);
    const plain = await fetch(url);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
    const other = await fetch(url, { headers: { origin: 'http://elsewhere.test' } });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('metrics', () => {
  it('label the S3 listener\'s requests with role s3 and the S3 operation', async () => {
    const samples = await scrape(s);
    expect(total(samples, 'granary_http_requests_total', { role: 's3', operation: 'OptionsObject', status: '200' })).toBeGreaterThanOrEqual(3);
    expect(total(samples, 'granary_http_requests_total', { role: 's3', operation: 'OptionsObject', status: '403' })).toBeGreaterThanOrEqual(4);
    expect(total(samples, 'granary_http_requests_total', { role: 's3', operation: 'PutObject', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'granary_http_requests_total', { role: 's3', operation: 'GetObject', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'granary_http_requests_total', { role: 's3', operation: 'PutBucketCors' })).toBe(1);
    expect(total(samples, 'granary_http_request_duration_seconds_count', { role: 's3', operation: 'GetObject' })).toBeGreaterThanOrEqual(3);
    expect(total(samples, 'granary_http_sent_bytes_total', { role: 's3' })).toBeGreaterThan(0);
  });
});

describe('from a page on another origin (Chromium)', () => {
  it('puts through a presigned URL and reads the object and its exposed ETag back', async () => {
    const ctx = await browser.newContext();
    try {
      const tab = await ctx.newPage();
      await tab.goto(page.origin);
      const putUrl = await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: 'from-browser.txt', ContentType: 'text/plain' }), { expiresIn: 300 });
      const getUrl = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'from-browser.txt' }), { expiresIn: 300 });
      const result = await tab.evaluate(
        async ({ putUrl, getUrl }) => {
          const put = await fetch(putUrl, { method: 'PUT', body: 'bytes from a browser', headers: { 'content-type': 'text/plain' } });
          const got = await fetch(getUrl);
          return { put: put.status, etag: put.headers.get('etag'), get: got.status, body: await got.text(), getEtag: got.headers.get('etag') };
        },
        { putUrl, getUrl },
      );
      expect(result.put).toBe(200);
      expect(result.etag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(result).toMatchObject({ get: 200, body: 'bytes from a browser', getEtag: result.etag });
      const head = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'from-browser.txt' }));
      expect(head.ContentType).toBe('text/plain');
      expect(await head.Body!.transformToString()).toBe('bytes from a browser');
    } finally {
      await ctx.close();
    }
  });

  it('submits an HTML form (POST Object, SigV4 policy) and is redirected back to the page', async () => {
    const now = s.clock.nowMs();
    const date = amzDate(now);
    const credential = `${AK}/${date.slice(0, 8)}/cn-east-1/s3/aws4_request`;
    const redirect = `${page.origin}/done`;
    const policy = Buffer.from(
      JSON.stringify({
        expiration: new Date(now + 600_000).toISOString(),
        conditions: [{ bucket }, ['starts-with', '$key', 'forms/'], { success_action_redirect: redirect }, { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' }, { 'x-amz-credential': credential }, { 'x-amz-date': date }],
      }),
    ).toString('base64');
    const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();
    const signingKey = hmac(hmac(hmac(hmac(`AWS4${SK}`, date.slice(0, 8)), 'cn-east-1'), 's3'), 'aws4_request');
    const fields = { key: 'forms/${filename}', success_action_redirect: redirect, 'x-amz-algorithm': 'AWS4-HMAC-SHA256', 'x-amz-credential': credential, 'x-amz-date': date, policy, 'x-amz-signature': hmac(signingKey, policy).toString('hex') };
    const ctx = await browser.newContext();
    try {
      const tab = await ctx.newPage();
      await tab.goto(page.origin);
      const esc = (v: string): string => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
      const inputs = Object.entries(fields).map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`).join('');
      const html = `<form method="POST" action="${esc(`${s.s3Url}/${bucket}`)}" enctype="multipart/form-data">${inputs}<input type="file" name="file" id="file"><button id="send" type="submit">Upload</button></form>`;
      await tab.evaluate(`document.body.innerHTML = ${JSON.stringify(html)}`);
      await tab.setInputFiles('#file', { name: 'note.txt', mimeType: 'text/plain', buffer: Buffer.from('a form upload') });
      await Promise.all([tab.waitForURL((u) => u.pathname === '/done'), tab.click('#send')]);
      const landed = new URL(tab.url());
      expect(landed.origin).toBe(page.origin);
      expect(landed.searchParams.get('bucket')).toBe(bucket);
      expect(landed.searchParams.get('key')).toBe('forms/note.txt');
      expect(landed.searchParams.get('etag')).toMatch(/^"?[0-9a-f]{32}"?$/);
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'forms/note.txt' }));
      expect(await got.Body!.transformToString()).toBe('a form upload');
    } finally {
      await ctx.close();
    }
  });
});
