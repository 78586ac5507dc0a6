/**
 * Load generator, run as a child process of run.ts (forked with IPC) so it never shares an event loop with a
 * server under test. Receives one job at a time, answers with its figures.
 *
 * Small downloads use a minimal HTTP/1.1 client over raw keep-alive sockets (one request in flight per
 * connection, Content-Length bodies only): it costs far less CPU per request than `http.request`, which matters
 * on a 2-core machine where client and server compete for the same cores. Uploads and large downloads use
 * `node:http` with a keep-alive Agent (their cost is on the server side).
 */
import { open, unlink } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import qiniu from 'qiniu';
import { contentBuffer, contentChunks, contentCrc32, contentDigest, contentEtag, KODO_BLOCK_BYTES } from './lib/data.js';
import type {
  BatchStatJob,
  ClientReply,
  DownloadFileJob,
  FetchJob,
  ClientRequest,
  FsWriteJob,
  GetBulkJob,
  GetRateJob,
  Job,
  JobResult,
  ListJob,
  ResumableV1Job,
  ResumableV2Job,
  StatJob,
  UploadJob,
  UploadStreamJob,
} from './lib/jobs.js';
import { multipartFrame } from './lib/multipart.js';
import { s3Rate } from './lib/s3-load.js';
import { msSince, summarize } from './lib/stats.js';

const HOST = '127.0.0.1';

interface Tally {
  ok: number;
  errors: number;
  firstError?: string;
  bytes: number;
  latencies: number[];
  entries?: number;
  /** The measured part of the job when it is not the whole job (uploads: without the HEAD check after). */
  elapsedMs?: number;
  steps?: Record<string, number>;
}

function newTally(): Tally {
  return { ok: 0, errors: 0, bytes: 0, latencies: [] };
}

function fail(t: Tally, message: string): void {
  t.errors++;
  t.firstError ??= message;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Sends one request whose body is a buffer or a list of buffers (views of the content block: written as they
 * are, no copy); resolves with status, headers and the whole answer body.
 */
function request(agent: http.Agent, opts: http.RequestOptions, body?: Buffer | Buffer[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, agent, ...opts }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Array.isArray(body)) {
      for (const b of body) req.write(b);
      req.end();
    } else req.end(body);
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

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
const short = (res: Answer): string => `HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`;

/**
 * Checks a finished upload: the answer is 200 `{hash, key}` with the content's etag and our key, and one
 * `HEAD /<bucket>/<key>` reports `size` bytes. Returns an error message, or undefined when all is right.
 */
async function checkUpload(res: Answer, job: { port: number; bucket: string; key: string; size: number }): Promise<string | undefined> {
  if (res.status !== 200) return short(res);
  let answer: { hash?: unknown; key?: unknown };
  try {
    answer = JSON.parse(res.body.toString('utf8')) as typeof answer;
  } catch {
    return `answer is not JSON: ${short(res)}`;
  }
  const etag = contentEtag(job.size);
  if (answer.hash !== etag || answer.key !== job.key) return `answer ${JSON.stringify(answer)}, expected hash ${etag} and key ${job.key}`;
  const agent = new http.Agent({ keepAlive: false });
  const head = await request(agent, { method: 'HEAD', port: job.port, path: `/${job.bucket}/${encodeURIComponent(job.key)}` });
  agent.destroy();
  const length = Number(head.headers['content-length']);
  if (head.status !== 200 || length !== job.size) return `HEAD after upload: HTTP ${head.status}, content-length ${length}, expected ${job.size}`;
  return undefined;
}

/** Marks a whole-file upload done: one upload of `size` bytes in `ms`, or the first problem. */
function finish(t: Tally, problem: string | undefined, size: number, ms: number): Tally {
  if (problem !== undefined) fail(t, problem);
  else {
    t.ok++;
    t.bytes += size;
    t.latencies.push(ms);
  }
  t.elapsedMs = ms;
  return t;
}

/** Runs `count` numbered tasks, `parallel` at a time; stops starting new ones after a failure. */
async function inParallel(count: number, parallel: number, t: Tally, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && t.errors === 0) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
}

async function resumableV1(job: ResumableV1Job): Promise<Tally> {
  const t = newTally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.parallel });
  const authorization = `UpToken ${job.token}`;
  const count = Math.ceil(job.size / KODO_BLOCK_BYTES);
  const ctxs: string[] = [];
  const start = process.hrtime.bigint();
  await inParallel(count, job.parallel, t, async (i) => {
    const len = Math.min(KODO_BLOCK_BYTES, job.size - i * KODO_BLOCK_BYTES);
    const headers = { authorization, 'content-type': 'application/octet-stream', 'content-length': len };
    const s = process.hrtime.bigint();
    try {
      const res = await request(agent, { method: 'POST', port: job.port, path: `/mkblk/${len}`, headers }, [...contentChunks(len)]);
      if (res.status !== 200) return fail(t, `mkblk ${i}: ${short(res)}`);
      const a = JSON.parse(res.body.toString('utf8')) as { ctx?: string; offset?: number; crc32?: number };
      if (!a.ctx || a.offset !== len || a.crc32 !== contentCrc32(len)) return fail(t, `mkblk ${i}: unexpected answer ${short(res)}`);
      ctxs[i] = a.ctx;
      t.latencies.push(msSince(s));
    } catch (err) {
      fail(t, `mkblk ${i}: ${(err as Error).message}`);
    }
  });
  const blocksMs = msSince(start);
  if (t.errors > 0) {
    agent.destroy();
    return t;
  }
  const path = `/mkfile/${job.size}/key/${b64(job.key)}/mimeType/${b64('application/octet-stream')}/fname/${b64(job.key)}`;
  const body = Buffer.from(ctxs.join(','));
  const headers = { authorization, 'content-type': 'application/octet-stream', 'content-length': body.length };
  const s = process.hrtime.bigint();
  let res: Answer;
  try {
    res = await request(agent, { method: 'POST', port: job.port, path, headers }, body);
  } catch (err) {
    fail(t, `mkfile: ${(err as Error).message}`);
    agent.destroy();
    return t;
  }
  const finalMs = msSince(s);
  const totalMs = msSince(start);
  agent.destroy();
  // The per-block latencies are the job's `latency`; the whole upload is the elapsed time.
  const blockLatencies = t.latencies;
  t.latencies = [];
  finish(t, await checkUpload(res, job), job.size, totalMs);
  t.latencies = blockLatencies;
  t.steps = { blocksMs, finalMs };
  return t;
}

async function resumableV2(job: ResumableV2Job): Promise<Tally> {
  const t = newTally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.parallel });
  const authorization = `UpToken ${job.token}`;
  const base = `/buckets/${job.bucket}/objects/${b64(job.key)}/uploads`;
  const count = Math.ceil(job.size / job.partSize);
  const start = process.hrtime.bigint();
  let uploadId: string;
  try {
    const res = await request(agent, {
      method: 'POST',
      port: job.port,
      path: base,
      headers: { authorization, 'content-type': 'application/json', 'content-length': 0 },
    });
    uploadId = res.status === 200 ? String((JSON.parse(res.body.toString('utf8')) as { uploadId?: string }).uploadId ?? '') : '';
    if (!uploadId) {
      fail(t, `init: ${short(res)}`);
      agent.destroy();
      return t;
    }
  } catch (err) {
    fail(t, `init: ${(err as Error).message}`);
    agent.destroy();
    return t;
  }
  const initMs = msSince(start);
  const etags: string[] = [];
  await inParallel(count, job.parallel, t, async (i) => {
    const len = Math.min(job.partSize, job.size - i * job.partSize);
    const md5 = contentDigest('md5', len).toString('hex');
    const headers = { authorization, 'content-type': 'application/octet-stream', 'content-length': len, 'content-md5': md5 };
    const s = process.hrtime.bigint();
    try {
      const res = await request(agent, { method: 'PUT', port: job.port, path: `${base}/${uploadId}/${i + 1}`, headers }, [...contentChunks(len)]);
      if (res.status !== 200) return fail(t, `part ${i + 1}: ${short(res)}`);
      const a = JSON.parse(res.body.toString('utf8')) as { etag?: string; md5?: string };
      if (!a.etag || a.md5 !== md5) return fail(t, `part ${i + 1}: unexpected answer ${short(res)}`);
      etags[i] = a.etag;
      t.latencies.push(msSince(s));
    } catch (err) {
      fail(t, `part ${i + 1}: ${(err as Error).message}`);
    }
  });
  const partsMs = msSince(start) - initMs;
  if (t.errors > 0) {
    agent.destroy();
    return t;
  }
  const body = Buffer.from(
    JSON.stringify({
      parts: etags.map((etag, i) => ({ partNumber: i + 1, etag })),
      fname: job.key,
      mimeType: 'application/octet-stream',
      customVars: {},
      metadata: {},
    }),
  );
  const headers = { authorization, 'content-type': 'application/json', 'content-length': body.length };
  const s = process.hrtime.bigint();
  let res: Answer;
  try {
    res = await request(agent, { method: 'POST', port: job.port, path: `${base}/${uploadId}`, headers }, body);
  } catch (err) {
    fail(t, `complete: ${(err as Error).message}`);
    agent.destroy();
    return t;
  }
  const finalMs = msSince(s);
  const totalMs = msSince(start);
  agent.destroy();
  const partLatencies = t.latencies;
  t.latencies = [];
  finish(t, await checkUpload(res, job), job.size, totalMs);
  t.latencies = partLatencies;
  t.steps = { initMs, partsMs, finalMs };
  return t;
}

/** The disk's floor for an upload: sequential writes of the content, one fsync, in this process. */
async function fsWrite(job: FsWriteJob): Promise<Tally> {
  const t = newTally();
  const path = join(job.dir, `fs-write-${process.pid}-${Date.now()}.bin`);
  const start = process.hrtime.bigint();
  try {
    const fh = await open(path, 'wx');
    try {
      let pos = 0;
      for (let off = 0; off < job.size; off += job.chunk) {
        for (const c of contentChunks(Math.min(job.chunk, job.size - off))) {
          await fh.write(c, 0, c.length, pos);
          pos += c.length;
        }
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    finish(t, undefined, job.size, msSince(start));
  } catch (err) {
    fail(t, (err as Error).message);
  } finally {
    await unlink(path).catch(() => undefined);
  }
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
  const response = new Promise<Answer>((resolve, reject) => {
    const req = http.request(
      { host: HOST, port: job.port, method: 'POST', path: '/', headers: { 'content-type': frame.contentType, 'content-length': length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    pipeline(Readable.from(body(), { objectMode: false }), req).catch(reject);
  });
  try {
    const res = await response;
    const ms = msSince(start);
    return finish(t, await checkUpload(res, job), job.size, ms);
  } catch (err) {
    fail(t, (err as Error).message);
  }
  return t;
}

/** Listing requests signed like the SDK's QBox management credential (docs/development/kodo-protocol.md §2.2), one at a time. */
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

/** Sync fetches, one at a time (see FetchJob); `elapsedMs` is the sum of the fetches. */
async function fetchJob(job: FetchJob): Promise<Tally> {
  const t = newTally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const mac = new qiniu.auth.digest.Mac(job.accessKey, job.secretKey);
  const hash = contentEtag(job.size);
  const path = `/fetch/${qiniu.util.urlsafeBase64Encode(job.url)}/to/${encodedEntry(job.bucket, job.key)}`;
  const authorization = qiniu.util.generateAccessToken(mac, `http://${HOST}:${job.port}${path}`);
  let elapsed = 0;
  for (let i = 0; i < job.count; i++) {
    const start = process.hrtime.bigint();
    try {
      const res = await request(agent, { method: 'POST', port: job.port, path, headers: { authorization, 'content-length': 0 } });
      const ms = msSince(start);
      elapsed += ms;
      const text = res.body.toString('utf8');
      const answer = res.status === 200 ? (JSON.parse(text) as { fsize?: number; hash?: string }) : {};
      if (res.status !== 200 || answer.fsize !== job.size || answer.hash !== hash) {
        fail(t, `HTTP ${res.status}: ${text.slice(0, 200)} (expected fsize ${job.size}, hash ${hash})`);
        continue;
      }
      t.ok++;
      t.bytes += job.size;
      t.latencies.push(ms);
    } catch (err) {
      fail(t, (err as Error).message);
    }
  }
  agent.destroy();
  t.elapsedMs = elapsed;
  return t;
}

/** Node's fetch into a file + fsync, one at a time (see DownloadFileJob); `elapsedMs` excludes the unlinks. */
async function downloadFile(job: DownloadFileJob): Promise<Tally> {
  const t = newTally();
  let elapsed = 0;
  for (let i = 0; i < job.count; i++) {
    const path = join(job.dir, `download-${process.pid}-${i}.bin`);
    const start = process.hrtime.bigint();
    try {
      const res = await fetch(job.url);
      if (res.status !== 200 || !res.body) throw new Error(`HTTP ${res.status}`);
      const fh = await open(path, 'wx');
      let size = 0;
      try {
        for await (const chunk of res.body) {
          await fh.write(chunk);
          size += chunk.length;
        }
        await fh.sync();
      } finally {
        await fh.close();
      }
      const ms = msSince(start);
      elapsed += ms;
      if (size !== job.size) fail(t, `${size} bytes, expected ${job.size}`);
      else {
        t.ok++;
        t.bytes += size;
        t.latencies.push(ms);
      }
    } catch (err) {
      elapsed += msSince(start);
      fail(t, (err as Error).message);
    } finally {
      await unlink(path).catch(() => undefined);
    }
  }
  t.elapsedMs = elapsed;
  return t;
}

function perform(job: Job): Promise<Tally> {
  switch (job.kind) {
    case 'upload':
      return upload(job);
    case 'get-rate':
      return getRate(job);
    case 'get-bulk':
      return getBulk(job);
    case 'upload-stream':
      return uploadStream(job);
    case 'resumable-v1':
      return resumableV1(job);
    case 'resumable-v2':
      return resumableV2(job);
    case 'fs-write':
      return fsWrite(job);
    case 'list':
      return list(job);
    case 'stat':
      return stat(job);
    case 'batch-stat':
      return batchStat(job);
    case 'fetch':
      return fetchJob(job);
    case 'download-file':
      return downloadFile(job);
    case 's3-put':
    case 's3-get':
      return s3Rate(job);
  }
}

async function run(job: Job): Promise<JobResult> {
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  const t = await perform(job);
  const elapsedMs = t.elapsedMs ?? msSince(start);
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
  if (t.steps !== undefined) result.steps = t.steps;
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
