/**
 * The node flags of worker processes (workers/primary.ts `workerExecArgv`): the primary's own flags plus V8's
 * initial old-space size (GRANARY_WORKER_OLD_SPACE_MB) and largest semi-space (GRANARY_WORKER_SEMI_SPACE_MB), each
 * unless 0 or set by the operator.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { workerExecArgv } from '../../src/workers/primary.js';

describe('workerExecArgv', () => {
  it('adds --initial-old-space-size after the inherited flags', () => {
    expect(workerExecArgv(['--enable-source-maps'], 256)).toEqual(['--enable-source-maps', '--initial-old-space-size=256']);
  });

  it('adds nothing for 0, and keeps an operator-given size', () => {
    expect(workerExecArgv(['--trace-gc'], 0)).toEqual(['--trace-gc']);
    expect(workerExecArgv(['--initial-old-space-size=64'], 256)).toEqual(['--initial-old-space-size=64']);
    expect(workerExecArgv(['--initial_old_space_size=64'], 256)).toEqual(['--initial_old_space_size=64']);
  });

  it('GRANARY_WORKER_OLD_SPACE_MB: default 256, 0 allowed, bad values refused', () => {
    expect(loadConfig({}).workerOldSpaceMb).toBe(256);
    expect(loadConfig({ GRANARY_WORKER_OLD_SPACE_MB: '0' }).workerOldSpaceMb).toBe(0);
    expect(() => loadConfig({ GRANARY_WORKER_OLD_SPACE_MB: '-1' })).toThrow(/GRANARY_WORKER_OLD_SPACE_MB/);
    expect(() => loadConfig({ GRANARY_WORKER_OLD_SPACE_MB: 'big' })).toThrow(/GRANARY_WORKER_OLD_SPACE_MB/);
  });

  it('adds --max-semi-space-size when asked, unless the operator set it', () => {
    expect(workerExecArgv([], 256, 4)).toEqual(['--initial-old-space-size=256', '--max-semi-space-size=4']);
    expect(workerExecArgv(['--max-semi-space-size=16'], 256, 4)).toEqual(['--max-semi-space-size=16', '--initial-old-space-size=256']);
    expect(workerExecArgv(['--max_semi_space_size=2'], 0, 4)).toEqual(['--max_semi_space_size=2']);
    expect(workerExecArgv([], 0, 0)).toEqual([]);
  });

  it('GRANARY_WORKER_SEMI_SPACE_MB: default 8, 0 allowed, bad values refused', () => {
    expect(loadConfig({}).workerSemiSpaceMb).toBe(8);
    expect(loadConfig({ GRANARY_WORKER_SEMI_SPACE_MB: '0' }).workerSemiSpaceMb).toBe(0);
    expect(() => loadConfig({ GRANARY_WORKER_SEMI_SPACE_MB: '-1' })).toThrow(/GRANARY_WORKER_SEMI_SPACE_MB/);
  });
});
