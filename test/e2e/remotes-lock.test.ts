/**
 * The remotes file under concurrent changes (transfer/remotes.ts, transfer/file-lock.ts): eight `granary remote add`
 * processes started at once all keep their remote (each reads, changes and writes remotes.json holding
 * remotes.json.lock), the file stays 0600 in a 0700 directory and no lock or temp file is left; adds and removes at
 * once in one process end with exactly the expected set; a lock left by a process that is gone is taken over, and a
 * lock held by a live process is waited for, then reported naming its holder.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withFileLock } from '../../src/transfer/file-lock.js';
import { RemoteStore } from '../../src/transfer/remotes.js';
import { BIN, cleanEnv, REPO_ROOT, runAsync } from '../helpers/cli.js';

describe('the remotes file under concurrent changes', { timeout: 120_000 }, () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'granary-remotes-lock-'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('eight granary remote add processes at once keep all eight remotes; 0600, no lock or temp file left', async () => {
    const config = join(work, 'cli');
    const env = cleanEnv({ GRANARY_CONFIG_DIR: config });
    const names = Array.from({ length: 8 }, (_, i) => `r${i}`);
    const runs = await Promise.all(
      names.map((name) => runAsync(process.execPath, [BIN, 'remote', 'add', name, '--ak', `ak-${name}`, '--sk', `sk-${name}`, '--uc-host', '127.0.0.1:1', '--no-check'], { cwd: REPO_ROOT, env })),
    );
    for (const r of runs) expect(r.status, r.stderr).toBe(0);
    const list = await runAsync(process.execPath, [BIN, 'remote', 'list'], { cwd: REPO_ROOT, env });
    expect(list.status, list.stderr).toBe(0);
    for (const name of names) expect(list.stdout).toContain(name);
    expect(Object.keys(await new RemoteStore(config).load()).sort()).toEqual(names);
    expect((await readdir(config)).sort()).toEqual(['remotes.json']);
    expect((await stat(join(config, 'remotes.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(config)).mode & 0o777).toBe(0o700);
  });

  it('adds and removes at once in one process end with the expected set', async () => {
    const store = new RemoteStore(join(work, 'inproc'));
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.put({ name: `k${i}`, accessKey: 'a', secretKey: 's' })));
    await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => store.remove(`k${i}`)),
      ...Array.from({ length: 5 }, (_, i) => store.put({ name: `n${i}`, accessKey: 'a', secretKey: 's' })),
    ]);
    expect(Object.keys(await store.load()).sort()).toEqual(['k5', 'k6', 'k7', 'k8', 'k9', 'n0', 'n1', 'n2', 'n3', 'n4']);
    expect(await readdir(store.dir)).toEqual(['remotes.json']);
  });

  it("a lock left by a process that is gone is taken over; a live holder's is waited for, then named", async () => {
    const store = new RemoteStore(join(work, 'stale'));
    await store.put({ name: 'first', accessKey: 'a', secretKey: 's' });
    // The pid of a process that has exited.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(`${store.file}.lock`, `${gone} ${Date.now()}\n`, { mode: 0o600 });
    await store.put({ name: 'second', accessKey: 'a', secretKey: 's' });
    expect(Object.keys(await store.load()).sort()).toEqual(['first', 'second']);
    expect(await readdir(store.dir)).toEqual(['remotes.json']);

    // Held by this (live) process: a second taker waits, and gets it once the first lets go.
    const lock = join(work, 'held.lock');
    const order: string[] = [];
    let release!: () => void;
    const first = withFileLock(lock, async () => {
      order.push('first');
      await new Promise<void>((resolve) => (release = resolve));
    });
    const second = withFileLock(lock, async () => void order.push('second'));
    await expect(withFileLock(lock, async () => undefined, { timeoutMs: 50 })).rejects.toThrow(new RegExp(`held.lock is held by process ${process.pid} for over 0.05 s`));
    expect(order).toEqual(['first']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
  });
});
