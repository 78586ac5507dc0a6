/** The BlobStore contract on the local disk (FsBlobStore, the embedded default) in a temp dir. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
