/**
 * The bounded pools of one server (`FopCommand.pool`): `image` (libvips, GRANARY_FOP_CONCURRENCY slots), `video`
 * (subprocesses, GRANARY_VIDEO_CONCURRENCY) and `model` (moderation, 1 by default). A module of its own so that the
 * offline commands, which only hold the pools, do not load the fop commands (and sharp).
 */
import { Semaphore } from './semaphore.js';
import type { FopPool } from './types.js';

/** The bounded pools of one server. */
export class FopPools {
  private readonly pools: Record<FopPool, Semaphore>;

  constructor(sizes: { image: number; video: number; model?: number }) {
    this.pools = { image: new Semaphore(sizes.image), video: new Semaphore(sizes.video), model: new Semaphore(sizes.model ?? 1) };
  }

  run<T>(pool: FopPool, task: () => Promise<T>): Promise<T> {
    return this.pools[pool].run(task);
  }
}
