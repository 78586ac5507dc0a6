/**
 * Granary under test with worker processes (`npm run bench -- --workers=N`): the primary of `granary serve`
 * (src/workers/primary.ts) forking N workers that each run bench/granary-server.ts (one `startGranary` per
 * worker, its slot from the primary), all sharing one port. Tells the bench parent the port once the first worker
 * listens (`{ready, port}`), answers `{type: 'memory'}` with the primary's own figures, and stops (its workers
 * too) on SIGTERM or when the parent is gone. The IPC requests `fop` and `unverified` of granary-server.ts are not
 * available here (the phases that need them run without --workers).
 *
 * CPU time and RSS the bench reads by pid are the primary's alone: with workers, rates and latencies are the
 * figures to compare.
 */
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { runPrimary } from '../src/workers/primary.js';

const config = loadConfig(process.env);
cluster.setupPrimary({ exec: fileURLToPath(new URL('./granary-server.js', import.meta.url)), args: [] });
cluster.once('listening', (_worker, address: AddressInfo) => process.send?.({ ready: true, port: address.port }));
await runPrimary(config, pino({ level: config.logLevel }).child({ role: 'primary' }), (t) => process.stdout.write(t));
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
process.on('message', (msg: { type?: string }) => {
  if (msg.type === 'memory') process.send?.({ type: 'memory', usage: process.memoryUsage() });
});
