/**
 * Granary under test with worker processes (`npm run bench -- --workers=N`): the primary of `granary serve`
 * (src/workers/primary.ts) forking N workers that each run bench/granary-server.ts (one `startGranary` per
 * worker, its slot from the primary) serving the connections the primary accepts on one port. Tells the bench
 * parent that port once the first worker accepts connections (`{ready, port}`), answers `{type: 'memory'}` with
 * the primary's own figures, and stops (its workers too) on SIGTERM or when the parent is gone. The IPC requests `fop` and `unverified` of granary-server.ts are not
 * available here (the phases that need them run without --workers).
 *
 * CPU time and RSS the bench reads by pid are the primary's alone: with workers, rates and latencies are the
 * figures to compare.
 */
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { runPrimary } from '../src/workers/primary.js';

const config = loadConfig(process.env);
cluster.setupPrimary({ exec: fileURLToPath(new URL('./granary-server.js', import.meta.url)), args: [] });
const primary = await runPrimary(config, pino({ level: config.logLevel }).child({ role: 'primary' }), (t) => process.stdout.write(t));
await primary.accepting;
process.send?.({ ready: true, port: primary.port });
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
process.on('message', (msg: { type?: string }) => {
  if (msg.type === 'memory') process.send?.({ type: 'memory', usage: process.memoryUsage() });
});
