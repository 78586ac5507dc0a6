/**
 * The idle collector (src/idle-gc.ts): a process that has been idle for the interval and grew since its last
 * collection runs one full collection and gives the memory back; 0 starts nothing.
 */
import { describe, expect, it } from 'vitest';
import { GROWTH_BYTES, startIdleCollector } from '../../src/idle-gc.js';
import { loadConfig } from '../../src/config.js';

describe('startIdleCollector', () => {
  it('collects once the process is idle and has grown, and gives the garbage back', async () => {
    // 16 MiB of Buffers, unreachable once the function returns.
    const allocated = ((): number => Array.from({ length: 8 }, () => Buffer.alloc(GROWTH_BYTES / 2, 1)).length)();
    expect(allocated).toBe(8);
    const events: Array<{ beforeBytes: number; afterBytes: number }> = [];
    let collected: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (collected = resolve));
    const c = startIdleCollector(1, (e) => {
      events.push(e);
      collected();
    });
    try {
      await first;
      expect(c.collections).toBe(1);
      // The Buffers' 16 MiB outside the heap were given back.
      expect(events[0]!.beforeBytes - events[0]!.afterBytes).toBeGreaterThanOrEqual(2 * GROWTH_BYTES);
    } finally {
      c.stop();
    }
  });

  it('0 starts nothing', () => {
    const c = startIdleCollector(0);
    expect(c.collections).toBe(0);
    c.stop();
  });

  it('GRANARY_IDLE_GC_SECONDS: default 10, 0 allowed, bad values refused', () => {
    expect(loadConfig({}).idleGcSeconds).toBe(10);
    expect(loadConfig({ GRANARY_IDLE_GC_SECONDS: '0' }).idleGcSeconds).toBe(0);
    expect(() => loadConfig({ GRANARY_IDLE_GC_SECONDS: 'soon' })).toThrow(/GRANARY_IDLE_GC_SECONDS/);
  });
});
