/**
 * FreeSpace (objects/free-space.ts) on a real small tmpfs: a reading is cached for a second while it is above the
 * reserve, but an upload is refused only on a fresh reading, so it goes through as soon as space comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FreeSpace } from '../../src/objects/free-space.js';
import { mountTmpfs, type Tmpfs } from '../helpers/tmpfs.js';

describe('FreeSpace', () => {
  let fs: Tmpfs;
  beforeAll(async () => {
    fs = await mountTmpfs(4 * 1024 * 1024);
  });
  afterAll(async () => {
    await fs?.unmount();
  });

  it('refuses on a fresh reading only: space freed a moment after a full-disk reading is used at once', async () => {
    const space = new FreeSpace(fs.dir, { bytes: 0 });
    await fs.fill();
    // Taken on the full disk: above a reserve of 0, so it is cached.
    expect((await space.reading())?.ok).toBe(true);
    await expect(space.require(64 * 1024)).rejects.toMatchObject({ status: 599 });
    await fs.unfill();
    // Within the second the reading above is cached for: the refusal re-reads and lets the upload through.
    await expect(space.require(64 * 1024)).resolves.toBeUndefined();
  });
});
