/**
 * Granary under test, in its own process: configured from GRANARY_* variables like the real `granary serve`,
 * plus BENCH_BUCKET (created, public, unless the data dir has it already). Tells the parent its port over IPC;
 * stops on SIGTERM or disconnect. IPC requests: `{type: 'memory'}` (V8's view of memory) and, for the figure of
 * processing alone (bench/video.ts), `{type: 'fop', bucket, key, fops}`, which runs a persistent pipeline through
 * executeFops (the entry point jobs use) and answers `{type: 'fop', ms, size, contentType}` or `{type: 'fop', error}`.
 */
import { stat } from 'node:fs/promises';
import { createBucket } from '../src/buckets/buckets.js';
import { loadConfig } from '../src/config.js';
import { executeFops } from '../src/fops/execute.js';
import { parsePipeline } from '../src/fops/registry.js';
import { startGranary } from '../src/main.js';

const running = await startGranary(loadConfig(process.env));
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

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  running.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('disconnect', stop);
// The bench asks for V8's view of memory (heap vs. external buffers) to explain an RSS figure.
process.on('message', (msg: FopRequest) => {
  if (msg.type === 'memory') process.send?.({ type: 'memory', usage: process.memoryUsage() });
  if (msg.type === 'fop') {
    runFop(msg).then(
      (reply) => process.send?.(reply),
      (err: unknown) => process.send?.({ type: 'fop', error: err instanceof Error ? err.message : String(err) }),
    );
  }
});
process.send?.({ ready: true, port: running.port });
