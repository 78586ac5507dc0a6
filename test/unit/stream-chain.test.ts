/**
 * chain() (objects/stream-chain.ts): pipeline()'s rules for the upload path — data flows with backpressure, it
 * resolves once the sink finished, and the first error or a source closing early destroys every stream and rejects.
 */
import { PassThrough, Readable, Transform, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { chain } from '../../src/objects/stream-chain.js';

const collector = (): Writable & { bytes: number } => {
  const w = new Writable({
    highWaterMark: 1024,
    write: (c: Buffer, _e, cb) => {
      w.bytes += c.length;
      setImmediate(cb); // slow sink: the source must wait (backpressure)
    },
  }) as Writable & { bytes: number };
  w.bytes = 0;
  return w;
};

describe('chain', () => {
  it('moves every byte through and resolves once the sink finished', async () => {
    const sink = collector();
    const src = Readable.from(Array.from({ length: 200 }, () => Buffer.alloc(4096)));
    await chain(src, new PassThrough(), sink);
    expect(sink.bytes).toBe(200 * 4096);
    expect(sink.writableFinished).toBe(true);
  });

  it('rejects with the first error and destroys every stream', async () => {
    const src = Readable.from(Array.from({ length: 100 }, () => Buffer.alloc(1024)));
    const boom = Object.assign(new Error('too large'), { code: 'E_TOO_LARGE' });
    let seen = 0;
    const mid = new Transform({
      transform: (c: Buffer, _e, cb) => (++seen === 3 ? cb(boom) : cb(null, c)),
    });
    const sink = collector();
    await expect(chain(src, mid, sink)).rejects.toBe(boom);
    expect(src.destroyed && mid.destroyed && sink.destroyed).toBe(true);
  });

  it('rejects when the source closes before its end (a cut-off client)', async () => {
    const src = new Readable({ read: () => undefined });
    const sink = collector();
    const done = chain(src, new PassThrough(), sink);
    src.push(Buffer.alloc(10));
    setImmediate(() => src.destroy());
    await expect(done).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    expect(sink.destroyed).toBe(true);
  });
});
