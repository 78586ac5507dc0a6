/**
 * The BlobStore contract (src/ports/blob.ts), run against every implementation: blob-store-fs.test.ts (local disk)
 * and blob-store-s3.test.ts (S3 on a real radosgw). Each test file passes a harness factory; the suite drives the
 * store only through the port, plus `stagingLeftovers()` to see what a crash left behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../src/ports/blob.js';

export interface BlobStoreHarness {
  /** A store over the harness's location; a second call gives another instance over the same blobs (a restart). */
  open(): Promise<BlobStore>;
  /** Staging leftovers now: files in tmp/ (disk), multipart uploads under the prefix (S3). */
  stagingLeftovers(): Promise<number>;
  /** Size above which the store sends a blob in parts (S3; the disk has none: any size). */
  partBytes: number;
  close(): Promise<void>;
}

/** Stages `bytes` (written in pieces of at most 64 KiB, like a request body) and seals it. */
export async function putBlob(store: BlobStore, bytes: Buffer): Promise<string> {
  const staged = await store.stage();
  await pipeline(Readable.from(pieces(bytes)), staged.sink);
  return staged.seal();
}

function* pieces(bytes: Buffer, size = 64 * 1024): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** The whole stream in one buffer. */
export async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The error `promise` rejects with (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<{ code?: unknown }> {
  try {
    await promise;
  } catch (err) {
    return err as { code?: unknown };
  }
  throw new Error('expected a failure');
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function listed(store: BlobStore): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const { id, mtimeMs } of store.list()) out.set(id, mtimeMs);
  return out;
}

/** Registers the contract suite for one implementation. */
export function blobStoreContract(name: string, setup: () => Promise<BlobStoreHarness>): void {
  describe(`BlobStore contract: ${name}`, () => {
    let h: BlobStoreHarness;
    let store: BlobStore;
    beforeAll(async () => {
      h = await setup();
      store = await h.open();
      await store.recover();
    });
    afterAll(async () => {
      await store?.close?.();
      await h?.close();
    });

    it('seals a blob under a fresh id and reads it back whole, small, and listed with a modification time', async () => {
      const bytes = randomBytes(100_000);
      const before = Date.now();
      const id = await putBlob(store, bytes);
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      expect(await collect(store.read(id))).toEqual(bytes);
      expect(await store.readSmall(id, bytes.length)).toEqual(bytes);
      const all = await listed(store);
      expect(all.has(id)).toBe(true);
      // The S3 server's clock stamps LastModified: allow for a skew of a minute either way.
      expect(all.get(id)).toBeGreaterThan(before - 60_000);
      expect(all.get(id)).toBeLessThan(Date.now() + 60_000);
    });

    it('keeps an empty blob', async () => {
      const id = await putBlob(store, Buffer.alloc(0));
      expect((await collect(store.read(id))).length).toBe(0);
      expect((await store.readSmall(id, 0)).length).toBe(0);
    });

    it('reads inclusive byte ranges', async () => {
      const bytes = randomBytes(10_000);
      const id = await putBlob(store, bytes);
      for (const [start, end] of [[0, 0], [0, 9_999], [1, 1], [4_096, 8_191], [9_999, 9_999], [123, 9_000]] as const) {
        expect(await collect(store.read(id, { start, end })), `${start}-${end}`).toEqual(bytes.subarray(start, end + 1));
      }
    });

    it('gives a local file of the blob, and again after its release', async () => {
      const bytes = randomBytes(300_000);
      const id = await putBlob(store, bytes);
      const first = await store.localFile(id);
      const second = await store.localFile(id);
      expect(await readFile(first.path)).toEqual(bytes);
      expect(second.path).toBe(first.path);
      await first.release();
      await first.release();
      expect(await readFile(second.path)).toEqual(bytes);
      await second.release();
      const third = await store.localFile(id);
      expect(await readFile(third.path)).toEqual(bytes);
      await third.release();
    });

    it('answers ENOENT for a missing blob on every read, and removing it is no error', async () => {
      const id = randomBytes(16).toString('hex');
      expect((await failure(collect(store.read(id)))).code).toBe('ENOENT');
      expect((await failure(collect(store.read(id, { start: 0, end: 10 })))).code).toBe('ENOENT');
      expect((await failure(store.readSmall(id, 10))).code).toBe('ENOENT');
      expect((await failure(store.localFile(id))).code).toBe('ENOENT');
      await store.remove(id);
    });

    it('keeps the deployment marker beside the blobs, never listed among them', async () => {
      const text = '{"deploymentId":"0123456789abcdef0123456789abcdef","createdAt":"2026-11-27T00:00:00.000Z"}\n';
      await store.writeMarker(text);
      expect(await store.readMarker()).toBe(text);
      await store.writeMarker(text.replace('0123', '4567'));
      const again = await h.open();
      expect(await again.readMarker()).toBe(text.replace('0123', '4567'));
      await again.close?.();
      for (const id of (await listed(store)).keys()) expect(id).toMatch(/^[0-9a-f]{32}$/);
    });

    it('removes a blob: it is no longer read nor listed', async () => {
      const id = await putBlob(store, randomBytes(1000));
      await store.remove(id);
      expect((await failure(collect(store.read(id)))).code).toBe('ENOENT');
      expect((await listed(store)).has(id)).toBe(false);
      await store.remove(id);
    });

    it('discards staged bytes: nothing is listed or left over, twice is fine, and a sealed blob is kept', async () => {
      const before = await listed(store);
      const staged = await store.stage();
      await pipeline(Readable.from(pieces(randomBytes(h.partBytes + 100_000))), staged.sink);
      await staged.discard();
      await staged.discard();
      expect([...(await listed(store)).keys()].filter((id) => !before.has(id))).toEqual([]);
      expect(await h.stagingLeftovers()).toBe(0);

      const bytes = randomBytes(5000);
      const sealed = await store.stage();
      await pipeline(Readable.from([bytes]), sealed.sink);
      const id = await sealed.seal();
      await sealed.discard();
      expect(await collect(store.read(id))).toEqual(bytes);
    });

    it('discards a blob whose writing was cut off mid-stream (the client went away)', async () => {
      const before = await listed(store);
      const staged = await store.stage();
      const source = new Readable({ read() {} });
      const written = pipeline(source, staged.sink);
      source.push(randomBytes(h.partBytes + 1000));
      source.destroy(new Error('client went away'));
      await expect(written).rejects.toThrow('client went away');
      await staged.discard();
      expect([...(await listed(store)).keys()].filter((id) => !before.has(id))).toEqual([]);
      expect(await h.stagingLeftovers()).toBe(0);
    });

    it('stores a large blob (several parts on S3) intact, ranges across part boundaries included', async () => {
      const size = 2 * h.partBytes + 123_457;
      const bytes = randomBytes(size);
      const id = await putBlob(store, bytes);
      expect(sha(await collect(store.read(id)))).toBe(sha(bytes));
      const edge = h.partBytes;
      for (const [start, end] of [[edge - 10, edge + 10], [0, size - 1], [size - 5, size - 1], [edge - 1, 2 * edge]] as const) {
        expect(sha(await collect(store.read(id, { start, end }))), `${start}-${end}`).toBe(sha(bytes.subarray(start, end + 1)));
      }
      const local = await store.localFile(id);
      expect(sha(await readFile(local.path))).toBe(sha(bytes));
      await local.release();
      await store.remove(id);
    });

    it('stages many blobs at once, each sealed under its own id with its own bytes', async () => {
      const contents = Array.from({ length: 8 }, (_, i) => randomBytes(1000 + i * 70_001));
      const ids = await Promise.all(contents.map((bytes) => putBlob(store, bytes)));
      expect(new Set(ids).size).toBe(ids.length);
      const back = await Promise.all(ids.map((id) => collect(store.read(id))));
      back.forEach((bytes, i) => expect(sha(bytes), `blob ${i}`).toBe(sha(contents[i] as Buffer)));
    });

    it('recover() after a crash: staging leftovers are gone, sealed blobs stay', async () => {
      const kept = randomBytes(2000);
      const keptId = await putBlob(store, kept);
      // A crash mid-upload: bytes staged (more than a part) and neither sealed nor discarded.
      const abandoned = await store.stage();
      await new Promise<void>((resolve, reject) =>
        abandoned.sink.write(randomBytes(h.partBytes + 1000), (err) => (err ? reject(err) : resolve())),
      );
      await new Promise<void>((resolve, reject) => abandoned.sink.write(Buffer.alloc(1), (err) => (err ? reject(err) : resolve())));
      expect(await h.stagingLeftovers()).toBeGreaterThan(0);

      const restarted = await h.open();
      try {
        await restarted.recover();
        expect(await h.stagingLeftovers()).toBe(0);
        expect(await collect(restarted.read(keptId))).toEqual(kept);
        expect((await listed(restarted)).has(keptId)).toBe(true);
      } finally {
        await restarted.close?.();
      }
    });
  });
}
