/**
 * A full garbage collection when the process has gone idle: what it gives back to the system.
 *
 * Why: V8 collects when allocation demands it, never because the process went quiet. A worker that just started
 * holds its start-up garbage and a young generation grown to its maximum (2 × 16 MiB committed); one that just
 * served a burst of uploads holds the Buffers of their bodies (tens of MB outside the JS heap, freed only by a
 * collection) and old-space garbage up to `--initial-old-space-size`. Measured on the default start
 * (bench/footprint.ts, docs/development/benchmarks.md "Memory"): ~50 MB per worker after a burst of uploads, and
 * the young generation shrinks to ~1 MiB, since V8 shrinks it when a collection finds the allocation rate low.
 *
 * How: every second the process looks at its event-loop utilization over that second (the share of time spent
 * running callbacks, `performance.eventLoopUtilization`); below `IDLE_UTILIZATION` (lease renewals and polls only)
 * the second was idle. Once the seconds since the last busy one reach `intervalSeconds`, and the heap plus the
 * memory outside it (`heapTotal + external`) grew by more than `GROWTH_BYTES` since the last collection (or since
 * the start), it runs one full collection (~10–170 ms on the event loop, at a moment nothing was waiting). A process
 * under steady load never collects this way; one that serves a trickle of requests collects only when it has
 * something to give back.
 *
 * V8 shrinks the young generation only in a collection that finds the allocation rate low; when the first collection
 * after a burst left it grown, the next idle second collects once more.
 *
 * `gc` is V8's own, exposed with `--expose-gc` set at run time (`v8.setFlagsFromString`, then read from a new
 * context: the way test runners such as Jest reach it without a command-line flag); a process started with
 * `--expose-gc` uses its global one. Setting: GRANARY_IDLE_GC_SECONDS (0 = off).
 */
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Event-loop utilization below which an interval counts as idle (0–1). */
export const IDLE_UTILIZATION = 0.02;
/** How often the event loop's utilization is looked at, ms. */
const TICK_MS = 1000;
/** Growth of heapTotal + external since the last collection that makes one worth it, bytes. */
export const GROWTH_BYTES = 4 * 1024 * 1024;

/** Committed young generation above which a collection left it unshrunk, bytes. */
const NEW_SPACE_SHRUNK_BYTES = 2 * 1024 * 1024;

/** V8's committed young generation (new space), bytes. */
function newSpaceBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
}

/** V8's `gc()`: the global one when node was started with --expose-gc, else exposed now. */
function exposedGc(): () => void {
  const global = (globalThis as { gc?: () => void }).gc;
  if (typeof global === 'function') return global;
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** What the collector counts (for tests and logs). */
export interface IdleCollector {
  /** Collections run so far. */
  readonly collections: number;
  stop(): void;
}

/** The memory a collection could give back: V8's heap as committed plus the memory it accounts outside it, bytes. */
function footprint(): number {
  const m = process.memoryUsage();
  return m.heapTotal + m.external;
}

/**
 * Starts the idle collector (see the module comment); `intervalSeconds` 0 starts nothing. The timer does not keep
 * the process alive. `onCollect` hears each collection's before/after footprint (bytes) and duration (ms).
 */
export function startIdleCollector(
  intervalSeconds: number,
  onCollect?: (e: { beforeBytes: number; afterBytes: number; ms: number }) => void,
): IdleCollector {
  const state = { collections: 0, stop: (): void => undefined };
  if (intervalSeconds <= 0) return state;
  const gc = exposedGc();
  let baseline = 0;
  let secondPass = false;
  let last = performance.eventLoopUtilization();
  let idleSince = performance.now();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (utilization >= IDLE_UTILIZATION) {
      idleSince = performance.now();
      return;
    }
    if (performance.now() - idleSince < intervalSeconds * 1000) return;
    const before = footprint();
    if (before - baseline < GROWTH_BYTES) return;
    const started = performance.now();
    gc();
    const ms = performance.now() - started;
    // V8 shrinks the young generation only in a collection that finds allocation slow; right after a burst the
    // first one may not: the next idle second then collects once more (its footprint still counts as growth).
    const shrinkLeft = !secondPass && newSpaceBytes() > NEW_SPACE_SHRUNK_BYTES;
    secondPass = shrinkLeft;
    baseline = shrinkLeft ? 0 : footprint();
    state.collections++;
    onCollect?.({ beforeBytes: before, afterBytes: baseline, ms });
    // The collection's own time is not activity.
    last = performance.eventLoopUtilization();
  }, TICK_MS);
  timer.unref();
  state.stop = () => clearInterval(timer);
  return state;
}
