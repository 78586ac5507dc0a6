/**
 * sharp (libvips), loaded on first use, server included: loading it takes ~170 ms and ~15 MB of resident memory
 * per process (libvips's code and its allocations; bench/footprint.ts), which a server that never processes an
 * image does not pay — the first image request of each process does, once. Loading configures libvips for the
 * server (`configure`: one thread per operation, since the fop pools provide the parallelism, and no operation
 * cache, which would hold up to 50 MB of decoded images), whoever loads it first.
 */
import { createRequire } from 'node:module';
import type sharpModule from 'sharp';

/** sharp's export: `sharp(input?, options?)` and its process-wide settings (`concurrency`, `cache`, …). */
export type SharpFactory = typeof sharpModule;

let loaded: SharpFactory | undefined;

/** The sharp module, loaded and configured once per process. */
export function loadSharp(): SharpFactory {
  if (!loaded) {
    const sharp = createRequire(import.meta.url)('sharp') as SharpFactory;
    sharp.concurrency(1);
    sharp.cache(false);
    loaded = sharp;
  }
  return loaded;
}
