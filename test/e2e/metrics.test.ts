/**
 * `GET /metrics` on the console listener (src/metrics/): the token guard, then counters that move after real
 * traffic driven by the official SDK — form and resumable (v1 mkfile, v2 complete) uploads, downloads, a fop on a
 * download URL (cache miss, then hit), a pfop job with a saveas output, a fetch the outbound guard refuses — and
 * the gauges read on scrape (job queue, disk, bucket usage, event-loop lag).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { has, scrape, total, type Sample } from '../helpers/metrics.js';
import { saveas, sdkPfop, waitFinal } from '../helpers/pfop.js';
import { seededBytes } from '../helpers/files.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES, waitUntil } from '../helpers/upload.js';

const TOKEN = 'metrics-secret-token';
const B = 'metered';
const MiB = 1024 * 1024;

describe('GET /metrics', () => {
  let s: TestServer;
  let photo: Buffer;
  beforeAll(async () => {
    s = await startTestServer({ GRANARY_METRICS_TOKEN: TOKEN });
    photo = await readFile(join(FIXTURE_IMAGES, 'gps_DSCN0010.jpg'));
    await createBucket(s, B);
  });
  afterAll(async () => s?.stop());

  it('requires the bearer token when GRANARY_METRICS_TOKEN is set', async () => {
    const none = await fetch(`${s.consoleUrl}/metrics`);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ error: 'token not specified' });
    const wrong = await fetch(`${s.consoleUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: 'bad token' });
    const basic = await fetch(`${s.consoleUrl}/metrics`, { headers: { authorization: `Basic ${TOKEN}` } });
    expect(basic.status).toBe(401);
    const ok = await fetch(`${s.consoleUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(await ok.text()).toMatch(/^# HELP granary_/m);
    // Not on the Kodo API port.
    expect((await fetch(`${s.url}/metrics`)).status).not.toBe(200);
  });

  it('counts uploads, downloads, fops, a pfop job and a refused fetch', async () => {
    const before = await scrape(s, TOKEN);
    const delta = (after: Sample[], name: string, labels: Record<string, string> = {}): number =>
      total(after, name, labels) - total(before, name, labels);

    // Form upload (SDK).
    const form = await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(s.uploadToken({ scope: `${B}:photo.jpg` }), 'photo.jpg', photo, new qiniu.form_up.PutExtra()));
    expect(form.status).toBe(200);
    // Resumable uploads (SDK): v1 (mkblk/mkfile) and v2 (multipart, complete).
    const big = seededBytes('metrics', 5 * MiB);
    for (const version of ['v1', 'v2'] as const) {
      const key = `${version}.bin`;
      const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, version);
      const up = new qiniu.resume_up.ResumeUploader(s.zoneConfig());
      const r = await sdk(up.putStream(s.uploadToken({ scope: `${B}:${key}` }), key, Readable.from([big]), big.length, extra));
      expect(r.status, JSON.stringify(r.data)).toBe(200);
    }
    // Downloads.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${s.url}/${B}/photo.jpg`);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBe(photo.length);
    }
    // A fop on a download URL: computed (miss), then served from the cache (hit).
    for (const expected of ['miss', 'hit']) {
      const res = await fetch(`${s.url}/${B}/photo.jpg?imageView2/2/w/100`);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(res.headers.get('x-granary-cache')).toBe(expected);
    }
    // A pfop job writing its output with saveas.
    const sub = await sdkPfop(s, B, 'photo.jpg', [`imageView2/2/w/64|${saveas(B, 'thumb.jpg')}`], '');
    expect(sub.status).toBe(200);
    expect((await waitFinal(s, sub.data.persistentId as string)).code).toBe(0);
    // A fetch of a loopback address: refused by the outbound guard (no GRANARY_OUTBOUND_ALLOW here).
    const refused = await sdk(s.bucketManager().fetch(`${s.url}/${B}/photo.jpg`, B, 'copy.jpg'));
    expect(refused.status).toBeGreaterThanOrEqual(400);

    // The job's final state is visible to prefop a moment before its worker counts it (the worker counts once the
    // state is durable): wait for the counter, then read everything from one scrape.
    await waitUntil(
      async () => total(await scrape(s, TOKEN), 'granary_jobs_finished_total', { code: '0' }) > total(before, 'granary_jobs_finished_total', { code: '0' }),
      'the pfop job counted',
    );
    const after = await scrape(s, TOKEN);
    // Uploads by kind, with their bytes.
    expect(delta(after, 'granary_uploads_total', { kind: 'form' })).toBe(1);
    expect(delta(after, 'granary_upload_bytes_total', { kind: 'form' })).toBe(photo.length);
    expect(delta(after, 'granary_uploads_total', { kind: 'mkfile' })).toBe(1);
    expect(delta(after, 'granary_uploads_total', { kind: 'v2-complete' })).toBe(1);
    expect(delta(after, 'granary_upload_bytes_total', { kind: 'v2-complete' })).toBe(big.length);
    expect(delta(after, 'granary_uploads_total', { kind: 'pfop-output' })).toBe(1);
    expect(delta(after, 'granary_uploads_total', { kind: 'fetch' })).toBe(0);

    // Requests by role, operation and status; the latency histogram; bytes in and out.
    const download = { role: 'io', operation: 'io.download' };
    expect(delta(after, 'granary_http_requests_total', { ...download, status: '200' })).toBe(4); // 2 plain + 2 fop
    expect(delta(after, 'granary_http_requests_total', { role: 'up', operation: 'up.form', status: '200' })).toBe(1);
    expect(delta(after, 'granary_http_requests_total', { role: 'up', operation: 'up.mkblk', status: '200' })).toBe(2);
    expect(delta(after, 'granary_http_requests_total', { role: 'api', operation: 'api.pfop', status: '200' })).toBe(1);
    expect(delta(after, 'granary_http_requests_total', { role: 'io', status: String(refused.status) })).toBeGreaterThanOrEqual(1);
    expect(delta(after, 'granary_http_request_duration_seconds_count', download)).toBe(4);
    // The download read of photo.jpg: the first a miss, a later one (no commit between them) answered from memory.
    expect(delta(after, 'granary_read_cache_lookups_total', { result: 'miss' })).toBeGreaterThanOrEqual(1);
    expect(delta(after, 'granary_read_cache_lookups_total', { result: 'hit' })).toBeGreaterThanOrEqual(1);
    expect(has(after, 'granary_http_request_duration_seconds_bucket', { ...download, le: '+Inf' })).toBe(true);
    expect(has(after, 'granary_http_request_duration_seconds_bucket', { ...download, le: '0.1' })).toBe(true);
    expect(delta(after, 'granary_http_received_bytes_total', { role: 'up' })).toBeGreaterThanOrEqual(photo.length + 2 * big.length);
    expect(delta(after, 'granary_http_sent_bytes_total', { role: 'io' })).toBeGreaterThanOrEqual(2 * photo.length);
    // The scrape of the console listener is counted under role `console`.
    expect(total(after, 'granary_http_requests_total', { role: 'console', operation: 'console.metrics', status: '200' })).toBeGreaterThanOrEqual(2);
    // Keys and bucket names never appear in request labels.
    for (const x of after.filter((x) => x.name.startsWith('granary_http_'))) {
      expect(JSON.stringify(x.labels)).not.toMatch(/photo|metered|v1\.bin/);
    }

    // Fops: the URL fop (once: the hit is not recomputed) and the pfop command; cache results.
    expect(delta(after, 'granary_fop_runs_total', { command: 'imageView2', result: 'ok' })).toBe(2);
    expect(delta(after, 'granary_fop_duration_seconds_count', { command: 'imageView2' })).toBe(2);
    expect(delta(after, 'granary_fop_cache_requests_total', { result: 'miss' })).toBe(1);
    expect(delta(after, 'granary_fop_cache_requests_total', { result: 'hit' })).toBe(1);

    // Jobs: finished with code 0; nothing left waiting or running.
    expect(delta(after, 'granary_jobs_finished_total', { code: '0' })).toBe(1);
    expect(total(after, 'granary_jobs', { state: 'waiting' })).toBe(0);
    expect(total(after, 'granary_jobs', { state: 'running' })).toBe(0);

    // The refused fetch.
    expect(delta(after, 'granary_outbound_refused_total')).toBe(1);

    // Gauges read on scrape: bucket usage (bucket names allowed here), disk, event-loop lag.
    const stored = photo.length + 2 * big.length + total(after, 'granary_upload_bytes_total', { kind: 'pfop-output' });
    expect(total(after, 'granary_bucket_bytes', { bucket: B })).toBe(stored);
    expect(total(after, 'granary_bucket_objects', { bucket: B })).toBe(4);
    expect(total(after, 'granary_disk_free_bytes')).toBeGreaterThan(0);
    expect(total(after, 'granary_disk_total_bytes')).toBeGreaterThanOrEqual(total(after, 'granary_disk_free_bytes'));
    expect(has(after, 'granary_nodejs_eventloop_lag_seconds')).toBe(true);
    expect(has(after, 'granary_scrub_corrupt_entries')).toBe(true);
  });
});

describe('GET /metrics without a token configured', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.stop());

  it('answers without credentials, and each server has its own registry', async () => {
    const samples = await scrape(s);
    expect(total(samples, 'granary_uploads_total')).toBe(0);
    expect(has(samples, 'granary_disk_free_bytes')).toBe(true);
  });
});
