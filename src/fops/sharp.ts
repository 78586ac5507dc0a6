/**
 * sharp (libvips), loaded on first use. Loading it takes ~170 ms; processes that never decode an image skip it:
 * every offline `granary` command, including those that only parse a pipeline (bucket styles). The server loads
 * it at start-up (`configureImageWork`, fops/run.ts), so no request pays for it.
 */
import { createRequire } from 'node:module';
import type sharpModule from 'sharp';

/** sharp's export: `sharp(input?, options?)` and its process-wide settings (`concurrency`, `cache`, …). */
export type SharpFactory = typeof sharpModule;

let loaded: SharpFactory | undefined;

/** The sharp module, loaded once per process. */
export function loadSharp(): SharpFactory {
  loaded ??= createRequire(import.meta.url)('sharp') as SharpFactory;
  return loaded;
}
