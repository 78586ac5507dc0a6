/**
 * Granary under test, in its own process: configured from GRANARY_* variables like the real `granary serve`,
 * plus BENCH_BUCKET (created, public, unless the data dir has it already). Tells the parent its port over IPC;
 * stops on SIGTERM or disconnect. IPC requests: `{type: 'memory'}` (V8's view of memory) and, for the figure of
 * processing alone (bench/video.ts), `{type: 'fop', bucket, key, fops}`, which runs a persistent pipeline through
 * executeFops (the entry point jobs use) and answers `{type: 'fop', ms, size, contentType}` or `{type: 'fop', error}`.
 *
 * `{type: 'unverified', on: true}` starts a second listener in this process for the cost of verification alone
 * (bench/README.md, "Verification off"); it answers `{type: 'unverified', port}`. `{type: 'unverified', on: false}`
 * closes it and answers `{type: 'unverified', port: 0}`.
 *
 * `{type: 'profile', on: true}` starts V8's CPU profiler in this process (node:inspector) and answers
 * `{type: 'profile'}`; `{type: 'profile', on: false, path}` stops it, writes the `.cpuprofile` to `path` and
 * answers `{type: 'profile', path}`: a profile of one part of a bench only (bench/mkzip.ts, its job rounds).
 */
import { stat, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { FastifyInstance } from 'fastify';
import { createBucket } from '../src/buckets/buckets.js';
import { loadConfig } from '../src/config.js';
import { executeFops } from '../src/fops/execute.js';
import { parsePipeline } from '../src/fops/registry.js';
import { startGranary } from '../src/main.js';
import { checkDownloadable, lookupForDownload } from '../src/objects/read.js';
import { buildServer } from '../src/server.js';

// A worker forked by bench/granary-primary.ts (--workers) runs in its slot (its own fop cache dir).
const slot = process.env.GRANARY_WORKER_SLOT;
const running = await startGranary(loadConfig(process.env), slot !== undefined ? { slot: Number(slot) } : {});
const bucket = process.env.BENCH_BUCKET;
if (bucket && !(await running.g.meta.getBucket(bucket))) await createBucket(running.g, bucket, running.g.keys.accessKey);

interface FopRequest {
  type?: string;
  bucket?: string;
  key?: string;
  fops?: string;
}

async function runFop(req: FopRequest): Promise<Record<string, unknown>> {
  const { bucket: b, object } = await running.g.meta.getBucketAndObject(req.bucket ?? '', req.key ?? '');
  if (!b || !object) return { type: 'fop', error: `${req.bucket}:${req.key} is missing` };
  const started = process.hrtime.bigint();
  const out = await executeFops(running.g, b, object, parsePipeline(req.fops ?? '', 'persistent'), { timeoutSeconds: 3600 });
  try {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const r = out.result;
    const size = 'file' in r ? (await stat(r.file)).size : 'body' in r ? r.body.length : 0;
    return { type: 'fop', ms, size, contentType: 'json' in r ? 'application/json' : r.contentType };
  } finally {
    await out.dispose();
  }
}

let profiler: Session | undefined;

/** Starts (`on`) or stops the CPU profiler; a stopped profile is written to `path`. */
async function profile(on: boolean, path: string | undefined): Promise<Record<string, unknown>> {
  if (on) {
    profiler ??= new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 500 });
    await profiler.post('Profiler.start');
    return { type: 'profile' };
  }
  if (!profiler) return { type: 'profile', error: 'not profiling' };
  const { profile: prof } = await profiler.post('Profiler.stop');
  profiler.disconnect();
  profiler = undefined;
  if (path) await writeFile(path, JSON.stringify(prof));
  return { type: 'profile', path };
}

/** Path prefix of the unverified route: `/.bench-unverified/<bucket>/<key>`. */
const UNVERIFIED_PREFIX = '/.bench-unverified/';
let unverified: FastifyInstance | undefined;

/**
 * Granary's own app (buildServer: the same fastify options, hooks and error handler, on the same Granary context
 * and stores) with one extra route, `GET /.bench-unverified/<bucket>/<key>`, that answers a whole, public object
 * the way the download route does — same lookup and checks, same headers — but streams `g.blobs.read` straight
 * into the reply instead of `readObject` (no VerifyingStream). It exists only in this bench child; nothing in src/
 * changes. Only whole GETs of public buckets: the bench needs nothing else.
 */
async function startUnverified(): Promise<number> {
  const { g } = running;
  const app = await buildServer(g);
  app.get(`${UNVERIFIED_PREFIX}*`, async (request, reply) => {
    const rest = decodeURIComponent((request.params as { '*': string })['*']);
    const slash = rest.indexOf('/');
    const { bucket, object } = await lookupForDownload(g, rest.slice(0, slash), rest.slice(slash + 1));
    if (bucket.private) return reply.code(403).send();
    const rec = checkDownloadable(g, object);
    reply.headers({
      'content-type': rec.mimeType,
      etag: `"${rec.hash}"`,
      'last-modified': new Date(Number(rec.putTime / 10000n)).toUTCString(),
      'accept-ranges': 'bytes',
      'cache-control': 'public, max-age=31536000',
      'content-length': String(rec.fsize),
    });
    return reply.code(200).send(g.blobs.read(rec.blobId));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  unverified = app;
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

async function stopUnverified(): Promise<number> {
  const app = unverified;
  unverified = undefined;
  if (app) {
    const closed = app.close();
    app.server.closeAllConnections();
    await closed;
  }
  return 0;
}

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  stopUnverified()
    .then(() => running.close())
    .finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('disconnect', stop);
// The bench asks for V8's view of memory (heap vs. external buffers) to explain an RSS figure.
process.on('message', (msg: FopRequest & { on?: boolean; path?: string }) => {
  if (msg.type === 'profile') {
    profile(msg.on === true, msg.path).then(
      (reply) => process.send?.(reply),
      (err: unknown) => process.send?.({ type: 'profile', error: err instanceof Error ? err.message : String(err) }),
    );
  }
  if (msg.type === 'unverified') {
    (msg.on ? startUnverified() : stopUnverified()).then(
      (port) => process.send?.({ type: 'unverified', port }),
      (err: unknown) => process.send?.({ type: 'unverified', port: 0, error: err instanceof Error ? err.message : String(err) }),
    );
  }
  if (msg.type === 'memory') process.send?.({ type: 'memory', usage: process.memoryUsage() });
  if (msg.type === 'fop') {
    runFop(msg).then(
      (reply) => process.send?.(reply),
      (err: unknown) => process.send?.({ type: 'fop', error: err instanceof Error ? err.message : String(err) }),
    );
  }
});
process.send?.({ ready: true, port: running.port });
