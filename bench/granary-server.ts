/**
 * Granary under test, in its own process: configured from GRANARY_* variables like the real `granary serve`,
 * plus BENCH_BUCKET (created, public, unless the data dir has it already). Tells the parent its port over IPC;
 * stops on SIGTERM or disconnect.
 */
import { createBucket } from '../src/buckets/buckets.js';
import { loadConfig } from '../src/config.js';
import { startGranary } from '../src/main.js';

const running = await startGranary(loadConfig(process.env));
const bucket = process.env.BENCH_BUCKET;
if (bucket && !(await running.g.meta.getBucket(bucket))) await createBucket(running.g, bucket, running.g.keys.accessKey);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  running.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('disconnect', stop);
// The bench asks for V8's view of memory (heap vs. external buffers) to explain an RSS figure.
process.on('message', (msg: { type?: string }) => {
  if (msg.type === 'memory') process.send?.({ type: 'memory', usage: process.memoryUsage() });
});
process.send?.({ ready: true, port: running.port });
