/**
 * Lingering close (src/connections.ts): an upload refused before its body ended, or a request Node's HTTP parser
 * refused, is answered with a JSON error and `Connection: close`, and the client reads that answer even when it
 * only reads after sending its whole body (as many clients do). Before, the server closed the socket right after the answer; the body still arriving made the
 * kernel reset the connection, and the client saw EPIPE or ECONNRESET instead of the error (the fuzz test met it).
 *
 * The clients here are raw TCP sockets that do not read until every byte is written, with bodies (32 MiB) larger
 * than what the loopback's socket buffers hold, so without the lingering close the reset is certain.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const BUCKET = 'early';
const BODY_BYTES = 32 * 1024 * 1024;
const PIECE = Buffer.alloc(256 * 1024, 0x61);
let s: TestServer;
let token: string;

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  token = s.uploadToken({ scope: BUCKET });
});
afterAll(async () => {
  await s?.stop();
});

/** A request written by hand: its head, then its body in pieces (already framed when chunked). */
interface RawUpload {
  head: string;
  pieces: Iterable<Buffer>;
}

/** What a write-then-read client saw: the error a write met, if any, and every byte the server sent. */
interface Exchange {
  writeError?: string;
  received: string;
}

/** Opens a socket, writes `head` and every piece (awaiting each write), only then reads until the server closes. */
async function writeAllThenRead(port: number, upload: RawUpload): Promise<Exchange> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let writeError: string | undefined;
  const closed = once(socket, 'close');
  socket.on('error', (err: NodeJS.ErrnoException) => (writeError ??= err.code ?? err.message));
  const write = (b: Buffer | string): Promise<void> => new Promise((resolve, reject) => socket.write(b, (err) => (err ? reject(err) : resolve())));
  try {
    await write(upload.head);
    for (const piece of upload.pieces) await write(piece);
  } catch (err) {
    writeError ??= (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await closed;
  return { ...(writeError ? { writeError } : {}), received: Buffer.concat(chunks).toString('latin1') };
}

/** `n` bytes of 'a' in 256 KiB pieces; `chunked` frames each piece and ends with the last chunk. */
function* body(n: number, chunked: boolean): Generator<Buffer> {
  for (let sent = 0; sent < n; sent += PIECE.length) {
    const piece = PIECE.subarray(0, Math.min(PIECE.length, n - sent));
    yield chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
  }
  if (chunked) yield Buffer.from('0\r\n\r\n');
}

/** The status, lowercased head and body of the one answer in `received`. */
function answerOf(received: string): { status: number; head: string; body: string } {
  const end = received.indexOf('\r\n\r\n');
  const head = received.slice(0, end).toLowerCase();
  return { status: Number(/^http\/1\.1 (\d{3})/.exec(head)?.[1]), head, body: received.slice(end + 4) };
}

/**
 * Sends `upload` as a write-then-read client and expects the whole refusal: no write failed, then `status` with
 * `Connection: close` and a JSON `{"error"}` matching `error`.
 */
async function expectRefusal(upload: RawUpload, status: number, error: RegExp): Promise<void> {
  const seen = await writeAllThenRead(s.running.port, upload);
  expect(seen.writeError).toBeUndefined();
  const answer = answerOf(seen.received);
  expect(answer.status).toBe(status);
  expect(answer.head).toContain('connection: close');
  expect(JSON.parse(answer.body)).toEqual({ error: expect.stringMatching(error) });
}

/** The head of a chunked octet-stream POST to `path` with the upload token. */
const chunkedHead = (path: string): string =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: UpToken ${token}\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n`;

describe('an upload refused before its body ended', () => {
  it('form upload with a malformed part header: a client that reads only after sending 32 MiB gets the 400', async () => {
    const boundary = 'early-boundary';
    const preamble = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="token"\r\n\r\n${token}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nContent-Type application/octet-stream\r\n\r\n`,
    );
    const head =
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
      `Content-Length: ${preamble.length + BODY_BYTES}\r\n\r\n`;
    await expectRefusal({ head, pieces: [preamble, ...body(BODY_BYTES, false)] }, 400, /multipart/);
  });

  it('mkblk whose chunked body outgrows its block (the request stream is destroyed): the 400 arrives', async () => {
    await expectRefusal({ head: chunkedHead('/mkblk/100'), pieces: body(BODY_BYTES, true) }, 400, /larger than the rest of its block/);
  });

  it('mkfile whose chunked ctx list passes 4 MiB: the 413 arrives', async () => {
    await expectRefusal({ head: chunkedHead('/mkfile/100'), pieces: body(BODY_BYTES, true) }, 413, /too large/);
  });
});

describe('a request Node\'s HTTP parser refuses, with a body behind it', () => {
  it('a malformed header line: a client that reads only after sending 32 MiB gets the 400', async () => {
    const head = `POST /mkblk/100 HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: y\r\nContent-Length: ${BODY_BYTES}\r\n\r\n`;
    await expectRefusal({ head, pieces: body(BODY_BYTES, false) }, 400, /malformed HTTP request/);
  });
});

describe('how long a connection lingers', () => {
  const part = '--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nContent-Type application/octet-stream\r\n\r\nsome bytes';
  const head = `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000000\r\n\r\n${part}`;

  /**
   * A client that sends a form upload head and a malformed part, and keeps its side open after the server's FIN
   * (`allowHalfOpen`). `ended` resolves once the answer and the FIN are in; the server's side of the connection is
   * the socket `server` accepts next.
   */
  async function stalledUpload(t: TestServer): Promise<{ client: Socket; ended: Promise<string>; serverSide: Promise<Socket>; errors: string[] }> {
    const serverSide = once(t.running.app.server, 'connection').then(([socket]) => socket as Socket);
    const client = connect({ port: t.running.port, host: '127.0.0.1', allowHalfOpen: true });
    const errors: string[] = [];
    client.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    const chunks: Buffer[] = [];
    client.on('data', (c: Buffer) => chunks.push(c));
    const ended = once(client, 'end').then(() => Buffer.concat(chunks).toString('latin1'));
    await once(client, 'connect');
    client.write(head);
    return { client, ended, serverSide, errors };
  }

  it('after the answer and its FIN the server still reads what the client sends, until GRANARY_LINGER_TIMEOUT', async () => {
    const short = await startTestServer({ GRANARY_LINGER_TIMEOUT: '3', GRANARY_CONSOLE_PORT: '0' });
    try {
      const { client, ended, serverSide, errors } = await stalledUpload(short);
      const server = await serverSide;
      const serverClosed = once(server, 'close');
      expect(answerOf(await ended).status).toBe(400);
      // Sent after the FIN: read and dropped by the lingering server (a closed one would answer with a reset).
      const late = Buffer.alloc(256 * 1024, 0x61);
      await new Promise<void>((resolve, reject) => client.write(late, (err) => (err ? reject(err) : resolve())));
      await serverClosed; // the client never ends: the linger timeout (3 s: room for a busy machine to read first) closes it
      expect(server.bytesRead).toBe(Buffer.byteLength(head) + late.length);
      expect(errors).toEqual([]);
      client.destroy();
    } finally {
      await short.stop();
    }
  });

  it('stopping the server closes lingering connections at once (the default linger is 30 s)', async () => {
    const other = await startTestServer({ GRANARY_CONSOLE_PORT: '0' });
    const { client, ended, serverSide } = await stalledUpload(other);
    const serverClosed = once(await serverSide, 'close');
    expect(answerOf(await ended).status).toBe(400);
    await other.stop(); // would wait out the 30 s if the lingering connection stayed open
    await serverClosed;
    client.destroy();
  }, 15_000);
});
