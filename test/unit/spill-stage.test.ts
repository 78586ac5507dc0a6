/**
 * The spilling stage (objects/spill-stage.ts) over a file blob it opens when needed: bytes reach the file in
 * 256 KiB batches, the file's failures (a last write, its end, or a failure before a batch reaches it) fail the
 * stage's sink instead of being swallowed or waited on, an empty body with no inline storage is an empty file, and
 * a file still being opened when the upload is discarded is discarded too.
 */
import { Readable, Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { SpillingStage } from '../../src/objects/spill-stage.js';
import type { StagedBlob } from '../../src/ports/blob.js';

/**
 * A file blob in memory that records its writes (one entry per write or writev call, as the fs WriteStream makes
 * them); `failOnFinal` fails its end the way a failing fsync does.
 */
function fakeFile(opts: { failOnFinal?: Error; failOnWrite?: Error } = {}): StagedBlob & { writes: number[]; discarded: boolean; bytes: () => number } {
  const writes: number[] = [];
  const file = {
    writes,
    discarded: false,
    bytes: () => writes.reduce((a, b) => a + b, 0),
    sink: new Writable({
      write: (chunk: Buffer, _e, cb) => {
        writes.push(chunk.length);
        cb(opts.failOnWrite ?? null);
      },
      writev: (chunks: Array<{ chunk: Buffer }>, cb) => {
        writes.push(chunks.reduce((n, c) => n + c.chunk.length, 0));
        cb(opts.failOnWrite ?? null);
      },
      final: (cb) => cb(opts.failOnFinal ?? null),
    }),
    seal: async () => 'f'.repeat(32),
    discard: async () => {
      file.discarded = true;
    },
  };
  return file;
}

const chunks = (n: number, size: number): Buffer[] => Array.from({ length: n }, (_, i) => Buffer.alloc(size, i));

describe('SpillingStage', () => {
  it('writes a spilled body in 256 KiB batches, one write call each', async () => {
    const file = fakeFile();
    const stage = new SpillingStage(async () => file, 64 * 1024);
    await pipeline(Readable.from(chunks(64, 16 * 1024)), stage.sink); // 1 MiB in 16 KiB pieces
    expect(file.bytes()).toBe(1024 * 1024);
    expect(file.writes).toEqual([256, 256, 256, 256].map((k) => k * 1024)); // the buffered 64 KiB join the first batch
    expect(stage.inline).toBeUndefined();
  });

  it('fails the upload when the file fails at its end (flush), instead of reporting success', async () => {
    const file = fakeFile({ failOnFinal: Object.assign(new Error('fsync failed'), { code: 'EIO' }) });
    const stage = new SpillingStage(async () => file, 0);
    await expect(pipeline(Readable.from(chunks(2, 1000)), stage.sink)).rejects.toMatchObject({ code: 'EIO' });
  });

  it('fails the upload when the last batch, written at the end, fails (a full disk)', async () => {
    const file = fakeFile({ failOnWrite: Object.assign(new Error('no space'), { code: 'ENOSPC' }) });
    const stage = new SpillingStage(async () => file, 0);
    await expect(pipeline(Readable.from(chunks(2, 1000)), stage.sink)).rejects.toMatchObject({ code: 'ENOSPC' });
  });

  it('with inline max 0, an empty body is an empty file, not an inline blob', async () => {
    const file = fakeFile();
    const stage = new SpillingStage(async () => file, 0);
    await pipeline(Readable.from([]), stage.sink);
    expect(stage.inline).toBeUndefined();
    expect(await stage.seal()).toBe('f'.repeat(32));
  });

  it('keeps content within inline max in memory and opens no file', async () => {
    let opened = false;
    const stage = new SpillingStage(async () => {
      opened = true;
      return fakeFile();
    }, 64 * 1024);
    await pipeline(Readable.from(chunks(4, 1024)), stage.sink);
    expect(opened).toBe(false);
    expect(stage.inline?.length).toBe(4096);
  });

  it('a file still opening when the upload is discarded is discarded once it opens', async () => {
    const file = fakeFile();
    let open!: (f: StagedBlob) => void;
    const stage = new SpillingStage(() => new Promise<StagedBlob>((resolve) => (open = resolve)), 0);
    const writing = pipeline(Readable.from(chunks(1, 10)), stage.sink).catch((e: unknown) => e);
    await new Promise((resolve) => setImmediate(resolve)); // the first chunk asked for the file
    const discarding = stage.discard();
    open(file);
    await discarding;
    expect(file.discarded).toBe(true);
    expect(await writing).toBeInstanceOf(Error);
  });

  it.each([
    ['destroyed by a failed write', (err: Error) => {
      const w = new Writable({ write: (_c, _e, cb) => cb() });
      w.on('error', () => undefined);
      w.destroy(err);
      return w;
    }],
    ['errored without being destroyed (a failed open with autoClose off)', (err: Error) => {
      const w = new Writable({ autoDestroy: false, construct: (cb) => cb(err), write: (_c, _e, cb) => cb() });
      w.on('error', () => undefined);
      return w;
    }],
  ])('fails the upload when the file failed before a batch reached it (%s) instead of waiting', async (_name, failedSink) => {
    const err = Object.assign(new Error('cannot create the staging file'), { code: 'EACCES' });
    let opened!: () => void;
    const fileOpened = new Promise<void>((resolve) => (opened = resolve));
    const file = { ...fakeFile(), sink: failedSink(err) };
    const stage = new SpillingStage(async () => {
      opened();
      return file;
    }, 0);
    stage.sink.on('error', () => undefined);
    stage.sink.write(Buffer.alloc(1000)); // opens the file; kept for the first batch
    await fileOpened;
    await new Promise((resolve) => setImmediate(resolve)); // the sink's error event has been emitted
    stage.sink.end(Buffer.alloc(300 * 1024)); // the first batch: written to the failed file
    await expect(finished(stage.sink)).rejects.toMatchObject({ code: 'EACCES' });
  });
});
