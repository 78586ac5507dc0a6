/** The BlobStore contract on the local disk (FsBlobStore, the embedded default) in a temp dir. */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Granary } from '../../src/context.js';
import { receiveBody } from '../../src/objects/receive.js';
import { FsBlobStore } from '../../src/store/fs/fs-blob-store.js';
import { blobStoreContract } from './blob-store.contract.js';

blobStoreContract('local disk (FsBlobStore)', async () => {
  const root = await mkdtemp(join(tmpdir(), 'granary-blobs-'));
  let starts = 0;
  return {
    // Each open is a new process start: its own staging tag (a restart removes the staging of tags gone).
    open: async () => new FsBlobStore(root, `start${++starts}`),
    stagingLeftovers: async () => (await readdir(join(root, 'tmp')).catch(() => [])).length,
    partBytes: 1024 * 1024,
    close: () => rm(root, { recursive: true, force: true }),
  };
});

/** Open descriptors of this process (Linux /proc). */
async function openFds(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

describe('FsBlobStore staging (local disk only)', () => {
  let root = '';
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'granary-fs-stage-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('keeps the staged file open past the last write until seal() has fsynced it, and closes it then', async () => {
    const store = new FsBlobStore(root, 'p1');
    await store.recover();
    const before = await openFds();
    const staged = await store.stage();
    staged.sink.end(Buffer.from('hello'));
    await finished(staged.sink);
    // Written, not sealed: the descriptor seal() fsyncs through is still open.
    expect(await openFds()).toBe(before + 1);
    const id = await staged.seal();
    expect(await openFds()).toBe(before);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    expect((await readFile(join(root, 'blobs', id.slice(0, 2), id.slice(2, 4), id))).toString()).toBe('hello');
  });

  it('closes the file on discard() after the last write, and leaves nothing staged', async () => {
    const store = new FsBlobStore(root, 'p1');
    await store.recover();
    const before = await openFds();
    const staged = await store.stage();
    staged.sink.end(Buffer.from('dropped'));
    await finished(staged.sink);
    await staged.discard();
    expect(await openFds()).toBe(before);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('discards a staged file destroyed before its end (a cut-off upload) without waiting for a last write', async () => {
    const store = new FsBlobStore(root, 'p1');
    await store.recover();
    const before = await openFds();
    const staged = await store.stage();
    staged.sink.write(Buffer.from('partial'));
    staged.sink.destroy();
    await staged.discard();
    await expect(staged.seal()).rejects.toThrow();
    expect(await openFds()).toBe(before);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('fails an upload whose staging file cannot be created instead of waiting forever', async () => {
    const store = new FsBlobStore(root, 'p1');
    await store.recover();
    // `tmp` replaced by a plain file: creating the staging file fails (ENOTDIR), as on a read-only or denied dir.
    await rm(join(root, 'tmp'), { recursive: true });
    await writeFile(join(root, 'tmp'), '');
    const space = { require: async () => undefined } as unknown as Granary['space'];
    const body = Readable.from([Buffer.alloc(300 * 1024, 1), Buffer.alloc(300 * 1024, 2)]);
    await expect(receiveBody({ blobs: store, space }, body, { maxBytes: 1 << 30 })).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});
