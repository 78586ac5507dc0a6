/** The FopCache port on a temp dir: store/read, LRU order across a reopen, moved files, bounds, single-flight. */
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterEach, describe, expect, it } from 'vitest';
import { FopCache, type CacheHit } from '../../src/fops/cache/fop-cache.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'fop-cache-unit-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const id = (n: number): string => n.toString(16).padStart(64, '0').replace(/^00/, 'ab');
const bodyOf = async (hit: CacheHit | undefined): Promise<string> => {
  if (!hit) throw new Error('miss');
  return 'body' in hit ? hit.body.toString() : text(hit.stream);
};

describe('FopCache', () => {
  it('stores bodies and files, answers them with their content type, and streams large ones', async () => {
    const root = join(await tempDir(), 'c');
    const cache = await FopCache.open(root, 10 * 1024 * 1024);
    expect(await cache.put(id(1), { body: Buffer.from('one') }, 'image/png')).toBe(true);
    const src = join(await tempDir(), 'result.bin');
    const big = 'x'.repeat(200 * 1024);
    await writeFile(src, big);
    expect(await cache.put(id(2), { file: src }, 'image/jpeg')).toBe(true);
    const one = await cache.get(id(1));
    expect(one).toMatchObject({ size: 3, contentType: 'image/png' });
    expect(await bodyOf(one)).toBe('one');
    const two = await cache.get(id(2));
    expect(two && 'stream' in two).toBe(true);
    expect(await bodyOf(two)).toBe(big);
    expect(await readdir(join(src, '..'))).toEqual([]); // the file was moved in
    expect(cache.stats()).toEqual({ entries: 2, bytes: 3 + big.length });
    expect(await cache.get(id(3))).toBeUndefined();
  });

  it('keeps the LRU order across a reopen and prunes to a smaller bound', async () => {
    const root = join(await tempDir(), 'c');
    const cache = await FopCache.open(root, 1000);
    for (const n of [1, 2, 3]) await cache.put(id(n), { body: Buffer.alloc(100, n) }, 'image/webp');
    // Make the on-disk order explicit (mtime), oldest first: 2, 3, 1.
    const at = async (n: number, sec: number): Promise<void> => {
      const sub = id(n).slice(0, 2);
      const name = (await readdir(join(root, sub))).find((f) => f.startsWith(id(n))) as string;
      await utimes(join(root, sub, name), sec, sec);
    };
    await at(2, 1000);
    await at(3, 2000);
    await at(1, 3000);
    const reopened = await FopCache.open(root, 250);
    expect(reopened.stats()).toEqual({ entries: 2, bytes: 200 });
    expect(reopened.has(id(2))).toBe(false);
    expect(reopened.has(id(3))).toBe(true);
    expect(reopened.has(id(1))).toBe(true);
    expect(await reopened.put(id(4), { body: Buffer.alloc(100) }, 'image/webp')).toBe(true);
    expect(reopened.has(id(3))).toBe(false);
  });

  it('a result larger than the bound, or a disabled cache, stores nothing', async () => {
    const root = join(await tempDir(), 'c');
    const cache = await FopCache.open(root, 10);
    expect(await cache.put(id(1), { body: Buffer.alloc(11) }, 'image/png')).toBe(false);
    expect(cache.stats()).toEqual({ entries: 0, bytes: 0 });
    const off = await FopCache.open(root, 0);
    expect(off.enabled).toBe(false);
    expect(await off.put(id(1), { body: Buffer.alloc(1) }, 'image/png')).toBe(false);
    expect(await readdir(join(root, '..'))).toEqual([]);
  });

  it('singleFlight shares one run among concurrent callers, and its error', async () => {
    const cache = await FopCache.open(join(await tempDir(), 'c'), 100);
    let runs = 0;
    const task = async (): Promise<number> => {
      runs++;
      await new Promise((r) => setImmediate(r));
      return 42;
    };
    expect(await Promise.all(Array.from({ length: 5 }, () => cache.singleFlight('k', task)))).toEqual([42, 42, 42, 42, 42]);
    expect(runs).toBe(1);
    const failing = async (): Promise<number> => {
      runs++;
      await new Promise((r) => setImmediate(r));
      throw new Error('boom');
    };
    const all = await Promise.allSettled([cache.singleFlight('k', failing), cache.singleFlight('k', failing)]);
    expect(all.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(runs).toBe(2);
    expect(await cache.singleFlight('k', task)).toBe(42); // a new flight after the last one ended
    expect(runs).toBe(3);
  });
});
