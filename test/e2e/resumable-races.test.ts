/**
 * Resumable uploads under concurrency and broken connections (docs/development/kodo-protocol.md §5.3, §6): two bputs racing with one ctx
 * (one wins, the other 701, no blob left behind), two uploads of one part number (one part, no leak), a complete
 * racing an abort and a mkfile racing another mkfile of the same blocks (the loser gets 612 / 701 — not a 5xx — and
 * nothing leaks), and a client vanishing mid-chunk or mid-part (staged bytes discarded, no session change, nothing
 * logged as a server error).
 * The races are made deterministic by holding the assembling request at its first blob read (the head bytes its
 * MIME type is sniffed from: assembly copies nothing, it commits a manifest of the pieces) until the other request
 * has finished.
 */
import { request } from 'node:http';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { seededBytes } from '../helpers/files.js';
import { RawUp, ok, type BlockJson, type PartJson, type PartsJson } from '../helpers/resumable.js';
import { countBlobs } from '../helpers/rs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectError, expectStored, stagingFiles, waitUntil } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'resumable-races';

let s: TestServer;
let up: RawUp;

/** Lines the server logs at level error or above (none expected: a vanished client is not a server failure). */
const errorsLogged: string[] = [];

beforeAll(async () => {
  const logger = pino({ level: 'error' }, { write: (line: string) => void errorsLogged.push(line) });
  s = await startTestServer({}, logger);
  await createBucket(s, BUCKET);
  up = new RawUp(s.url, s.uploadToken({ scope: BUCKET }));
});
afterAll(async () => s?.stop());

let restoreRead: (() => void) | undefined;
afterEach(() => restoreRead?.());

/**
 * Holds the server's `n`-th blob read from now on until `release()`; `reached` resolves when that read starts.
 * (The in-process server's BlobStore is wrapped; the held read opens its file only after the release.)
 */
function holdBlobRead(n: number): { reached: Promise<void>; release: () => void } {
  const blobs = s.running.g.blobs;
  const original = blobs.read.bind(blobs);
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const gate = new Promise<void>((r) => (release = r));
  let calls = 0;
  blobs.read = (id, range) => {
    calls++;
    if (calls !== n) return original(id, range);
    reached();
    return Readable.from(
      (async function* () {
        await gate;
        yield* original(id, range);
      })(),
    );
  };
  restoreRead = () => {
    blobs.read = original;
    restoreRead = undefined;
  };
  return { reached: reachedP, release };
}

describe('concurrent requests', () => {
  it('two bputs with the same ctx: one 200, one 701; the loser\'s bytes are dropped and the block follows the winner', async () => {
    const first = seededBytes('race-0', MiB);
    const j = ok<BlockJson>(await up.mkblk(3 * MiB, first));
    const blobs = await countBlobs(s);
    const chunks = [seededBytes('race-a', MiB), seededBytes('race-b', MiB)];
    const answers = await Promise.all(chunks.map((c) => up.bput(j.ctx, MiB, c)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 701]);
    expect(await countBlobs(s)).toBe(blobs + 1);
    const winner = answers.findIndex((a) => a.status === 200);
    const won = answers[winner]?.json as BlockJson;
    const last = seededBytes('race-c', MiB);
    const done = ok<BlockJson>(await up.bput(won.ctx, 2 * MiB, last));
    const whole = Buffer.concat([first, chunks[winner] as Buffer, last]);
    ok(await up.mkfile(whole.length, [done.ctx], { key: 'bput-race.bin' }));
    await expectStored(s, BUCKET, 'bput-race.bin', whole);
  });

  it('two uploads of one part number: one part remains (either copy), no blob leaks', async () => {
    const key = 'part-race.bin';
    const id = ok<{ uploadId: string }>(await up.init(BUCKET, key)).uploadId;
    const blobs = await countBlobs(s);
    const copies = [seededBytes('copy-a', 2 * MiB), seededBytes('copy-b', 2 * MiB)];
    const answers = await Promise.all(copies.map((c) => up.part(BUCKET, key, id, 1, c)));
    for (const a of answers) ok<PartJson>(a);
    expect(await countBlobs(s)).toBe(blobs + 1);
    const listed = ok<PartsJson>(await up.list(BUCKET, key, id)).parts;
    expect(listed).toHaveLength(1);
    const kept = answers.findIndex((a) => (a.json as PartJson).etag === listed[0]?.etag);
    expect(kept).toBeGreaterThanOrEqual(0);
    ok(await up.complete(BUCKET, key, id, { parts: [{ partNumber: 1, etag: listed[0]?.etag }] }));
    await expectStored(s, BUCKET, key, copies[kept] as Buffer);
  });

  it('an abort landing while complete reads the parts: abort 200, complete 612, nothing stored or leaked', async () => {
    const key = 'complete-vs-abort.bin';
    const blobs = await countBlobs(s);
    const id = ok<{ uploadId: string }>(await up.init(BUCKET, key)).uploadId;
    const parts = [];
    for (let n = 1; n <= 3; n++) {
      parts.push({ partNumber: n, etag: ok<PartJson>(await up.part(BUCKET, key, id, n, seededBytes(`cva${n}`, MiB))).etag });
    }
    const held = holdBlobRead(1);
    const completing = up.complete(BUCKET, key, id, { parts });
    await held.reached;
    const aborted = await up.abort(BUCKET, key, id);
    expect(aborted.status, aborted.text).toBe(200);
    held.release();
    expectError(await completing, 612);
    await expectAbsent(s, BUCKET, key);
    expect(await countBlobs(s)).toBe(blobs);
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('a part re-uploaded while complete reads it: complete 400, the upload stays usable with the new part', async () => {
    const key = 'complete-vs-reupload.bin';
    const id = ok<{ uploadId: string }>(await up.init(BUCKET, key)).uploadId;
    const data = [1, 2, 3].map((n) => seededBytes(`cvr${n}`, MiB));
    const parts = [];
    for (const [i, d] of data.entries()) parts.push({ partNumber: i + 1, etag: ok<PartJson>(await up.part(BUCKET, key, id, i + 1, d)).etag });
    const held = holdBlobRead(1);
    const completing = up.complete(BUCKET, key, id, { parts });
    await held.reached;
    const newThird = seededBytes('cvr3-new', MiB);
    const e3 = ok<PartJson>(await up.part(BUCKET, key, id, 3, newThird)).etag;
    held.release();
    expectError(await completing, 400);
    await expectAbsent(s, BUCKET, key);
    ok(await up.complete(BUCKET, key, id, { parts: [parts[0], parts[1], { partNumber: 3, etag: e3 }] }));
    await expectStored(s, BUCKET, key, Buffer.concat([data[0] as Buffer, data[1] as Buffer, newThird]));
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('two mkfiles of the same blocks, the second finishing first: one object, the other call 701', async () => {
    const a = seededBytes('mm-a', 4 * MiB);
    const b = seededBytes('mm-b', 1000);
    const ctxs = [await up.block(a), await up.block(b)];
    const blobs = await countBlobs(s);
    const held = holdBlobRead(1);
    const slow = up.mkfile(a.length + b.length, ctxs, { key: 'mkfile-slow.bin' });
    await held.reached;
    ok(await up.mkfile(a.length + b.length, ctxs, { key: 'mkfile-fast.bin' }));
    held.release();
    expectError(await slow, 701);
    await expectStored(s, BUCKET, 'mkfile-fast.bin', Buffer.concat([a, b]));
    await expectAbsent(s, BUCKET, 'mkfile-slow.bin');
    expect(await countBlobs(s)).toBe(blobs); // the two blocks' chunks are the object's pieces: no blob added or freed
    expect(await stagingFiles(s)).toEqual([]);
    expect(qetag(Buffer.concat([a, b]))).toMatch(/^l/);
  });
});

/** Sends `path` with half of `body` then drops the connection once the server staged the incoming bytes. */
async function vanishMidBody(method: string, path: string, body: Buffer): Promise<void> {
  const req = request({
    host: '127.0.0.1',
    port: s.running.port,
    method,
    path,
    headers: { authorization: `UpToken ${up.token ?? ''}`, 'content-type': 'application/octet-stream', 'content-length': body.length },
  });
  req.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => req.on('close', resolve));
  req.write(body.subarray(0, body.length / 2));
  await waitUntil(async () => (await stagingFiles(s)).length > 0, 'the server stages the incoming bytes');
  req.destroy();
  await closed;
  await waitUntil(async () => (await stagingFiles(s)).length === 0, 'the server discards the staged bytes');
}

describe('a client vanishing mid-body', () => {
  it('mid-mkblk and mid-bput: the staged bytes are discarded and the block is unchanged', async () => {
    const blobs = await countBlobs(s);
    await vanishMidBody('POST', `/mkblk/${4 * MiB}`, seededBytes('gone', 4 * MiB));
    expect(await countBlobs(s)).toBe(blobs);
    const first = seededBytes('stay-1', MiB);
    const j = ok<BlockJson>(await up.mkblk(2 * MiB, first));
    await vanishMidBody('POST', `/bput/${j.ctx}/${MiB}`, seededBytes('gone-2', MiB));
    expect(await countBlobs(s)).toBe(blobs + 1);
    const second = seededBytes('stay-2', MiB);
    const done = ok<BlockJson>(await up.bput(j.ctx, MiB, second));
    ok(await up.mkfile(2 * MiB, [done.ctx], { key: 'vanish-v1.bin' }));
    await expectStored(s, BUCKET, 'vanish-v1.bin', Buffer.concat([first, second]));
    expect(errorsLogged).toEqual([]);
  });

  it('mid-part: nothing is stored for that part', async () => {
    const key = 'vanish-v2.bin';
    const id = ok<{ uploadId: string }>(await up.init(BUCKET, key)).uploadId;
    const blobs = await countBlobs(s);
    await vanishMidBody('PUT', `${up.uploadsPath(BUCKET, key)}/${id}/1`, seededBytes('gone-3', 4 * MiB));
    expect(await countBlobs(s)).toBe(blobs);
    expect(ok<PartsJson>(await up.list(BUCKET, key, id)).parts).toEqual([]);
    expect(errorsLogged).toEqual([]);
  });
});
