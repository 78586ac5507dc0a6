/**
 * Load generator, run as a child process of run.ts (forked with IPC) so it never shares an event loop with a
 * server under test. Receives one job at a time, answers with its figures.
 *
 * Small downloads use a minimal HTTP/1.1 client over raw keep-alive sockets (one request in flight per
 * connection, Content-Length bodies only): it costs far less CPU per request than `http.request`, which matters
 * on a 2-core machine where client and server compete for the same cores. Uploads and large downloads use
 * `node:http` with a keep-alive Agent (their cost is on the server side).
 */
import http from 'node:http';
import net from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import qiniu from 'qiniu';
import { contentBuffer, contentChunks } from './lib/data.js';
import type {
  BatchStatJob,
  ClientReply,
  ClientRequest,
  GetBulkJob,
  GetRateJob,
  Job,
  JobResult,
  ListJob,
  StatJob,
  UploadJob,
  UploadStreamJob,
} from './lib/jobs.js';
import { multipartFrame } from './lib/multipart.js';
import { msSince, summarize } from './lib/stats.js';

const HOST = '127.0.0.1';

interface Tally {
  ok: number;
  errors: number;
  firstError?: string;
  bytes: number;
  latencies: number[];
  entries?: number;
}

function newTally(): Tally {
  return { ok: 0, errors: 0, bytes: 0, latencies: [] };
}

function fail(t: Tally, message: string): void {
  t.errors++;
  t.firstError ??= message;
}

/** Sends one buffered request; resolves with status and body. */
function request(agent: http.Agent, opts: http.RequestOptions, body?: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, agent, ...opts }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function upload(job: UploadJob): Promise<Tally> {
  const t = newTally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const data = contentBuffer(job.size);
  const deadline = performance.now() + job.durationMs;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const key = `${job.keyPrefix}${next++}`;
      const frame = multipartFrame(job.token, key);
      const body = Buffer.concat([frame.head, data, frame.tail]);
      const start = process.hrtime.bigint();
      try {
        const res = await request(
          agent,
          { method: 'POST', port: job.port, path: '/', headers: { 'content-type': frame.contentType, 'content-length': body.length } },
          body,
        );
        if (res.status === 200) {
          t.ok++;
          t.bytes += data.length;
          t.latencies.push(msSince(start));
        } else fail(t, `HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
      } catch (err) {
        fail(t, (err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, worker));
  agent.destroy();
  return t;
}

/** One keep-alive connection issuing GETs back to back until the deadline. */
function rawGetLoop(job: GetRateJob, deadline: number, t: Tally): Promise<void> {
  const req = Buffer.from(`GET ${job.path} HTTP/1.1\r\nHost: ${HOST}:${job.port}\r\nConnection: keep-alive\r\n\r\n`, 'latin1');
  return new Promise((resolve) => {
    const sock = net.connect(job.port, HOST);
    sock.setNoDelay(true);
    let head: Buffer | undefined; // bytes of a response whose header block is incomplete
    let inBody = false;
    let status = 0;
    let remaining = 0;
    let bodyBytes = 0;
    let start = 0n;
    let ending = false;
    const send = (): void => {
      if (performance.now() >= deadline) {
        ending = true;
        sock.end();
        return;
      }
      start = process.hrtime.bigint();
      sock.write(req);
    };
    const complete = (): void => {
      if (status >= 200 && status < 300 && bodyBytes === job.expectBytes) {
        t.ok++;
        t.bytes += bodyBytes;
        t.latencies.push(msSince(start));
      } else fail(t, `HTTP ${status}, ${bodyBytes} body bytes`);
      inBody = false;
      send();
    };
    sock.on('data', (chunk: Buffer) => {
      if (inBody) {
        remaining -= chunk.length;
        bodyBytes += chunk.length;
        if (remaining <= 0) complete();
        return;
      }
      const buf = head ? Buffer.concat([head, chunk]) : chunk;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        head = buf;
        return;
      }
      head = undefined;
      const text = buf.toString('latin1', 0, end);
      status = Number(text.slice(9, 12));
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(text);
      if (!m?.[1]) {
        fail(t, `HTTP ${status} without Content-Length`);
        sock.destroy();
        return;
      }
      const length = Number(m[1]);
      bodyBytes = buf.length - end - 4;
      remaining = length - bodyBytes;
      inBody = true;
      if (remaining <= 0) complete();
    });
    sock.on('error', (err) => fail(t, err.message));
    sock.on('close', () => {
      if (!ending) fail(t, 'connection closed by the server');
      resolve();
    });
    sock.on('connect', send);
  });
}

/** The same loop with node:http and a keep-alive Agent (to compare the clients' own cost: --http-client). */
async function httpGetLoop(job: GetRateJob, agent: http.Agent, deadline: number, t: Tally): Promise<void> {
  while (performance.now() < deadline) {
    const start = process.hrtime.bigint();
    try {
      const res = await request(agent, { method: 'GET', port: job.port, path: job.path });
      if (res.status >= 200 && res.status < 300 && res.body.length === job.expectBytes) {
        t.ok++;
        t.bytes += res.body.length;
        t.latencies.push(msSince(start));
      } else fail(t, `HTTP ${res.status}, ${res.body.length} body bytes`);
    } catch (err) {
      fail(t, (err as Error).message);
    }
  }
}

async function getRate(job: GetRateJob): Promise<Tally> {
  const t = newTally();
  const deadline = performance.now() + job.durationMs;
  if (job.client === 'http') {
    const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
    await Promise.all(Array.from({ length: job.concurrency }, () => httpGetLoop(job, agent, deadline, t)));
    agent.destroy();
  } else {
    await Promise.all(Array.from({ length: job.concurrency }, () => rawGetLoop(job, deadline, t)));
  }
  return t;
}

async function getBulk(job: GetBulkJob): Promise<Tally> {
  const t = newTally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.parallel });
  let left = job.count;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const start = process.hrtime.bigint();
      const req = http.get({ host: HOST, port: job.port, path: job.path, agent }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
        });
        res.on('end', () => {
          if (res.statusCode === 200 && n === job.expectBytes) {
            t.ok++;
            t.bytes += n;
            t.latencies.push(msSince(start));
          } else fail(t, `HTTP ${res.statusCode}, ${n} body bytes`);
          resolve();
        });
        res.on('error', (err) => {
          fail(t, err.message);
          resolve();
        });
      });
      req.on('error', (err) => {
        fail(t, err.message);
        resolve();
      });
    });
  const worker = async (): Promise<void> => {
    while (left > 0) {
      left--;
      await one();
    }
  };
  await Promise.all(Array.from({ length: job.parallel }, worker));
  agent.destroy();
  return t;
}

async function uploadStream(job: UploadStreamJob): Promise<Tally> {
  const t = newTally();
  const frame = multipartFrame(job.token, job.key);
  const length = frame.head.length + job.size + frame.tail.length;
  const start = process.hrtime.bigint();
  function* body(): Generator<Buffer> {
    yield frame.head;
    yield* contentChunks(job.size);
    yield frame.tail;
  }
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(
      { host: HOST, port: job.port, method: 'POST', path: '/', headers: { 'content-type': frame.contentType, 'content-length': length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    pipeline(Readable.from(body(), { objectMode: false }), req).catch(reject);
  });
  try {
    const res = await response;
    if (res.status === 200) {
      t.ok++;
      t.bytes += job.size;
      t.latencies.push(msSince(start));
    } else fail(t, `HTTP ${res.status}: ${res.text.slice(0, 200)}`);
  } catch (err) {
    fail(t, (err as Error).message);
  }
  return t;
}

/** Listing requests signed like the SDK's QBox management credential (protocol.md §2.2), one at a time. */
async function list(job: ListJob): Promise<Tally> {
  const t: Tally = { ...newTally(), entries: 0 };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const mac = new qiniu.auth.digest.Mac(job.accessKey, job.secretKey);
  let marker = job.marker;
  for (let i = 0; i < job.count; i++) {
    const path = marker ? `${job.path}&marker=${encodeURIComponent(marker)}` : job.path;
    const authorization = qiniu.util.generateAccessToken(mac, `http://${HOST}:${job.port}${path}`);
    const start = process.hrtime.bigint();
    try {
      const res = await request(agent, {
        method: 'POST',
        port: job.port,
        path,
        headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', 'content-length': 0 },
      });
      const ms = msSince(start);
      if (res.status !== 200) {
        fail(t, `HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
        break;
      }
      const page = JSON.parse(res.body.toString('utf8')) as { marker?: string; items: unknown[]; commonPrefixes?: string[] };
      const n = page.items.length + (page.commonPrefixes?.length ?? 0);
      if (job.expectEntries !== undefined && n !== job.expectEntries) {
        fail(t, `${n} entries instead of ${job.expectEntries}`);
        continue;
      }
      t.ok++;
      t.bytes += res.body.length;
      t.entries = (t.entries ?? 0) + n;
      t.latencies.push(ms);
      if (job.walk) {
        marker = page.marker ?? '';
        if (!marker) break;
      }
    } catch (err) {
      fail(t, (err as Error).message);
      break;
    }
  }
  agent.destroy();
  return t;
}

/** URL-safe base64 of `bucket:key` (EncodedEntryURI). */
function encodedEntry(bucket: string, key: string): string {
  return Buffer.from(`${bucket}:${key}`).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

async function stat(job: StatJob): Promise<Tally> {
  const t = newTally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const mac = new qiniu.auth.digest.Mac(job.accessKey, job.secretKey);
  const paths = job.keys.map((k) => `/stat/${encodedEntry(job.bucket, k)}`);
  const deadline = Date.now() + job.durationMs;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const path = paths[next++ % paths.length] as string;
      const authorization = qiniu.util.generateAccessToken(mac, `http://${HOST}:${job.port}${path}`);
      const start = process.hrtime.bigint();
      try {
        const res = await request(agent, { method: 'GET', port: job.port, path, headers: { authorization } });
        if (res.status !== 200) {
          fail(t, `HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
          continue;
        }
        t.ok++;
        t.bytes += res.body.length;
        t.latencies.push(msSince(start));
      } catch (err) {
        fail(t, (err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, worker));
  agent.destroy();
  return t;
}

async function batchStat(job: BatchStatJob): Promise<Tally> {
  const t: Tally = { ...newTally(), entries: 0 };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const mac = new qiniu.auth.digest.Mac(job.accessKey, job.secretKey);
  const body = job.keys.map((k) => `op=${encodeURIComponent(`/stat/${encodedEntry(job.bucket, k)}`)}`).join('&');
  const authorization = qiniu.util.generateAccessToken(mac, `http://${HOST}:${job.port}/batch`, body);
  const payload = Buffer.from(body);
  const headers = { authorization, 'content-type': 'application/x-www-form-urlencoded', 'content-length': payload.length };
  for (let i = 0; i < job.count; i++) {
    const start = process.hrtime.bigint();
    try {
      const res = await request(agent, { method: 'POST', port: job.port, path: '/batch', headers }, payload);
      const ms = msSince(start);
      const results = res.status === 200 ? (JSON.parse(res.body.toString('utf8')) as { code: number }[]) : [];
      if (res.status !== 200 || results.length !== job.keys.length || results.some((r) => r.code !== 200)) {
        fail(t, `HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
        continue;
      }
      t.ok++;
      t.bytes += res.body.length;
      t.entries = (t.entries ?? 0) + results.length;
      t.latencies.push(ms);
    } catch (err) {
      fail(t, (err as Error).message);
    }
  }
  agent.destroy();
  return t;
}

async function run(job: Job): Promise<JobResult> {
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  const t =
    job.kind === 'upload'
      ? await upload(job)
      : job.kind === 'get-rate'
        ? await getRate(job)
        : job.kind === 'get-bulk'
          ? await getBulk(job)
          : job.kind === 'list'
            ? await list(job)
            : job.kind === 'stat'
              ? await stat(job)
              : job.kind === 'batch-stat'
                ? await batchStat(job)
                : await uploadStream(job);
  const elapsedMs = msSince(start);
  const cpu = process.cpuUsage(cpu0);
  const result: JobResult = {
    ok: t.ok,
    errors: t.errors,
    bytes: t.bytes,
    elapsedMs,
    clientCores: (cpu.user + cpu.system) / 1000 / elapsedMs,
  };
  if (t.firstError !== undefined) result.firstError = t.firstError;
  if (t.latencies.length > 0) result.latency = summarize(t.latencies);
  if (t.entries !== undefined) result.entries = t.entries;
  return result;
}

process.on('message', (msg: ClientRequest) => {
  run(msg.job).then(
    (result) => process.send?.({ id: msg.id, result } satisfies ClientReply),
    (err: unknown) => process.send?.({ id: msg.id, error: (err as Error).stack ?? String(err) } satisfies ClientReply),
  );
});
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true });
