/**
 * Subprocesses left by a crashed server (src/fops/video/leftovers.ts): a recorded process still running with the
 * recorded argv is killed at start; one whose pid now runs something else (pid reuse) is left alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killLeftoverSubprocesses, recordSubprocess } from '../../src/fops/video/leftovers.js';

describe('killLeftoverSubprocesses', () => {
  const started: ChildProcess[] = [];
  let root = '';
  afterEach(async () => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (root) await rm(root, { recursive: true, force: true });
  });

  const sleeper = (): { child: ChildProcess; exited: Promise<string | null> } => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    started.push(child);
    return { child, exited: new Promise((resolve) => child.once('exit', (_code, sig) => resolve(sig))) };
  };

  it('kills a recorded process with the same argv, not one with another argv', async () => {
    root = await mkdtemp(join(tmpdir(), 'granary-leftovers-'));
    await mkdir(join(root, 'run1'));
    await mkdir(join(root, 'run2'));
    const match = sleeper();
    const other = sleeper();
    recordSubprocess(join(root, 'run1', '1.pid'), match.child.pid as number, ['sleep', '30']);
    recordSubprocess(join(root, 'run2', '1.pid'), other.child.pid as number, ['ffmpeg', '-i', 'file:/x']);
    await writeFile(join(root, 'run2', '2.pid'), '{"pid": 1'); // torn write: ignored
    expect(await killLeftoverSubprocesses(root)).toBe(1);
    expect(await match.exited).toBe('SIGKILL');
    expect(other.child.exitCode === null && other.child.signalCode === null).toBe(true);
  });

  it('a missing root kills nothing', async () => {
    expect(await killLeftoverSubprocesses(join(tmpdir(), 'granary-no-such-root'))).toBe(0);
  });
});
