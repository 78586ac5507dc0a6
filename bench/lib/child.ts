/**
 * Child processes of the bench: the two servers and the load generator, each a separate plain `node` process
 * running the transpiled scripts (lib/build.ts) from `buildDir`, talking to the bench over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { ClientReply, Job, JobResult } from './jobs.js';

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** Stops the child (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

export interface ServerChild extends Child {
  port: number;
  /** The server's own `process.memoryUsage()`. */
  memory(): Promise<NodeJS.MemoryUsage>;
  /** Sends `msg` over IPC and resolves with the first reply of the same `type`. */
  ask<T extends { type: string }>(msg: { type: string } & Record<string, unknown>): Promise<T>;
}

/** Forks `<buildDir>/bench/<script>.js` with `env` added and waits for its `{ready}` message. */
async function forkChild(
  buildDir: string,
  script: string,
  env: Record<string, string>,
  execArgv: string[] = [],
): Promise<{ child: Child; ready: Record<string, unknown> }> {
  const proc = fork(join(buildDir, 'bench', `${script}.js`), [], {
    execArgv,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`${script} exited (code ${code}) before it was ready`));
    proc.once('exit', onExit);
    proc.once('error', reject);
    proc.once('message', (msg: Record<string, unknown>) => {
      proc.off('exit', onExit);
      resolve(msg);
    });
  });
  const child: Child = {
    proc,
    pid: proc.pid ?? 0,
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  return { child, ready };
}

/**
 * The node flags of a server child: one Granary process (`granary-server`) gets the flag `granary serve` gives each
 * worker and `npm start` gives a single process, `--initial-old-space-size=<GRANARY_WORKER_OLD_SPACE_MB>` (without
 * it V8 runs a full collection every ~50 ms during large transfers and a 64 MiB GET costs about twice the CPU;
 * docs/operations/workers.md), unless `execArgv` sets its own.
 */
function serverArgv(script: string, env: Record<string, string>, execArgv: string[]): string[] {
  if (script !== 'granary-server' || execArgv.some((a) => a.startsWith('--initial-old-space-size'))) return execArgv;
  const mb = loadConfig({ ...process.env, ...env }).workerOldSpaceMb;
  return mb > 0 ? [`--initial-old-space-size=${mb}`, ...execArgv] : execArgv;
}

/** Starts a server script that reports `{ready, port}` (a one-process Granary with its heap flag: serverArgv). */
export async function startServer(
  buildDir: string,
  script: string,
  env: Record<string, string>,
  execArgv: string[] = [],
): Promise<ServerChild> {
  const { child, ready } = await forkChild(buildDir, script, env, serverArgv(script, env, execArgv));
  const ask = <T extends { type: string }>(msg: { type: string } & Record<string, unknown>): Promise<T> =>
    new Promise((resolve) => {
      const onMessage = (reply: { type?: string }): void => {
        if (reply.type !== msg.type) return;
        child.proc.off('message', onMessage);
        resolve(reply as T);
      };
      child.proc.on('message', onMessage);
      child.proc.send(msg);
    });
  const memory = async (): Promise<NodeJS.MemoryUsage> => (await ask<{ type: 'memory'; usage: NodeJS.MemoryUsage }>({ type: 'memory' })).usage;
  return { ...child, port: Number(ready.port), memory, ask };
}

/** The load generator: runs one job at a time. */
export interface ClientChild extends Child {
  run(job: Job): Promise<JobResult>;
}

export async function startClient(buildDir: string): Promise<ClientChild> {
  const { child } = await forkChild(buildDir, 'client', {});
  let nextId = 1;
  const pending = new Map<number, { resolve: (r: JobResult) => void; reject: (e: Error) => void }>();
  child.proc.on('message', (msg: ClientReply) => {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.result) p.resolve(msg.result);
    else p.reject(new Error(`client job failed: ${msg.error}`));
  });
  child.proc.on('exit', () => {
    for (const p of pending.values()) p.reject(new Error('client process exited'));
    pending.clear();
  });
  return {
    ...child,
    run: (job) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        child.proc.send({ id, job });
      }),
  };
}

/** What a one-shot child (bench/scrub-child.ts) reports: its own figures, in a `{type: 'result'}` message. */
export interface OneShotResult {
  type: 'result';
  error?: string;
  [figure: string]: unknown;
}

/**
 * Forks `<buildDir>/bench/<script>.js` with `args`, waits for its `{type: 'result'}` message, lets `whileAlive`
 * read /proc about it (the child waits for the disconnect before it exits), then disconnects and waits for the exit.
 */
export async function runOneShot(
  buildDir: string,
  script: string,
  args: string[],
  whileAlive: (pid: number) => void = () => undefined,
  onStart: (pid: number) => void = () => undefined,
): Promise<OneShotResult> {
  const proc = fork(join(buildDir, 'bench', `${script}.js`), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  onStart(proc.pid ?? 0);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const result = await new Promise<OneShotResult>((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`${script} ${args.join(' ')} exited (code ${code}) without a result`));
    proc.once('exit', onExit);
    proc.once('error', reject);
    proc.on('message', (msg: { type?: string }) => {
      if (msg.type !== 'result') return;
      proc.off('exit', onExit);
      resolve(msg as OneShotResult);
    });
  });
  whileAlive(proc.pid ?? 0);
  proc.disconnect();
  await exited;
  if (result.error) throw new Error(`${script} ${args.join(' ')}: ${result.error}`);
  return result;
}
