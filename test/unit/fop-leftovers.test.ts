/**
 * Subprocesses left by a crashed server (src/fops/video/leftovers.ts): a recorded process still running with the
 * recorded argv is killed at start; one whose pid now runs something else (pid reuse) is left alone. With worker
 * processes sharing the data dir, only the temp dirs of processes that are gone are cleared (clearFopTemp).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clearFopTemp } from '../../src/fops/execute.js';
import { fopTempPath, fopTempRoot } from '../../src/fops/temp-root.js';
import { killLeftoverSubprocesses, recordSubprocess } from '../../src/fops/video/leftovers.js';
import { readdir } from 'node:fs/promises';

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
    expect(await killLeftoverSubprocesses([join(root, 'run1'), join(root, 'run2')])).toBe(1);
    expect(await match.exited).toBe('SIGKILL');
    expect(other.child.exitCode === null && other.child.signalCode === null).toBe(true);
  });

  it('a missing root kills nothing', async () => {
    expect(await killLeftoverSubprocesses([join(tmpdir(), 'granary-no-such-root')])).toBe(0);
  });

  it('clearFopTemp removes the dirs of gone processes (killing their subprocesses), never a live worker\'s', async () => {
    root = await mkdtemp(join(tmpdir(), 'granary-leftovers-'));
    const temp = fopTempRoot(root);
    for (const d of ['own-1.a', 'live-2.b', 'dead-3.c', 'legacydir']) await mkdir(join(temp, d), { recursive: true });
    const live = sleeper();
    const dead = sleeper();
    recordSubprocess(join(temp, 'live-2.b', '1.pid'), live.child.pid as number, ['sleep', '30']);
    recordSubprocess(join(temp, 'dead-3.c', '1.pid'), dead.child.pid as number, ['sleep', '30']);
    expect(await clearFopTemp(root, 'own-1', async () => new Set(['live-2']))).toBe(1);
    expect(await dead.exited).toBe('SIGKILL');
    expect(live.child.exitCode === null && live.child.signalCode === null).toBe(true);
    expect((await readdir(temp)).sort()).toEqual(['live-2.b', 'own-1.a']);
  });

  it('clearFopTemp removes the temp files of gone processes (a manifest read into one file), never a live one\'s', async () => {
    root = await mkdtemp(join(tmpdir(), 'granary-leftovers-'));
    await mkdir(fopTempRoot(root), { recursive: true });
    const liveFile = fopTempPath(root, 'live-2', 'manifest-');
    const deadFile = fopTempPath(root, 'dead-3', 'manifest-');
    const offlineFile = fopTempPath(root, undefined, 'manifest-');
    for (const f of [liveFile, deadFile, offlineFile]) await writeFile(f, 'bytes');
    expect(await clearFopTemp(root, 'own-1', async () => new Set(['live-2']))).toBe(0);
    expect(await readdir(fopTempRoot(root))).toEqual([liveFile.slice(fopTempRoot(root).length + 1)]);
  });
});
