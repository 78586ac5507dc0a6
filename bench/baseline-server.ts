/**
 * The baseline: the least a Node server can do to serve a file — `node:http` and `fs.createReadStream` of a
 * plain file from BASELINE_ROOT, with Content-Length and Content-Type set. Sizes are read once at start (the
 * files never change), so a request costs no more than opening and streaming the file.
 */
import { createReadStream, readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';

const root = process.env.BASELINE_ROOT;
if (!root) throw new Error('BASELINE_ROOT is required');
const sizes = new Map<string, number>();
for (const name of readdirSync(root)) sizes.set(`/${name}`, statSync(join(root, name)).size);

const server = http.createServer((req, res) => {
  const size = req.url !== undefined ? sizes.get(req.url) : undefined;
  if (size === undefined) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
  createReadStream(join(root, req.url ?? '')).on('error', () => res.destroy()).pipe(res);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ ready: true, port: typeof address === 'object' && address ? address.port : 0 });
});
const stop = (): void => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('disconnect', stop);
// The bench asks for V8's view of memory (heap vs. external buffers) to explain an RSS figure.
process.on('message', (msg: { type?: string }) => {
  if (msg.type === 'memory') process.send?.({ type: 'memory', usage: process.memoryUsage() });
});
