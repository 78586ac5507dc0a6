/**
 * The baseline: the least a Node server can do to serve a file — `node:http` and `fs.createReadStream` of a
 * plain file from BASELINE_ROOT, with Content-Length and Content-Type set. Sizes are read once at start (the
 * files never change), so a request costs no more than opening and streaming the file.
 *
 * `POST /` is the durable upload baseline (issue 13): busboy parses the multipart form, the file part is written
 * to a temp file in BASELINE_UPLOAD_DIR, fsynced, renamed to its key's name and the directory fsynced — the least a
 * Node server must do to acknowledge an upload durably with one file per object — then `{"key"}` is answered.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readdirSync, statSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';

const root = process.env.BASELINE_ROOT;
if (!root) throw new Error('BASELINE_ROOT is required');
const uploadDir = process.env.BASELINE_UPLOAD_DIR ?? join(root, '..', 'baseline-uploads');
mkdirSync(uploadDir, { recursive: true });
const sizes = new Map<string, number>();
for (const name of readdirSync(root)) sizes.set(`/${name}`, statSync(join(root, name)).size);

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** The durable upload: parse, write, fsync, rename, fsync the directory, answer. */
function upload(req: http.IncomingMessage, res: http.ServerResponse): void {
  let key = '';
  let stored: Promise<void> | undefined;
  const bb = busboy({ headers: req.headers });
  bb.on('field', (name, value) => {
    if (name === 'key') key = value;
  });
  bb.on('file', (_name, file) => {
    const tmp = join(uploadDir, `.tmp-${randomBytes(8).toString('hex')}`);
    stored = pipeline(file, createWriteStream(tmp, { flush: true })).then(async () => {
      await rename(tmp, join(uploadDir, Buffer.from(key || randomBytes(8).toString('hex')).toString('hex')));
      await fsyncPath(uploadDir);
    });
  });
  bb.on('close', () => {
    if (!stored) return void res.writeHead(400).end('{"error":"no file"}');
    stored.then(
      () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ key })),
      (err: Error) => res.writeHead(500).end(JSON.stringify({ error: err.message })),
    );
  });
  req.pipe(bb);
}

const server = http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/') return upload(req, res);
  const size = req.url !== undefined ? sizes.get(req.url) : undefined;
  if (size === undefined) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
  createReadStream(join(root, req.url ?? '')).on('error', () => res.destroy()).pipe(res);
});
server.listen(Number(process.env.BASELINE_PORT ?? 0), '127.0.0.1', () => {
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
