/**
 * A real PostgreSQL for tests: a throw-away cluster of Debian's PostgreSQL 15 (package `postgresql-15`;
 * scripts/ensure-test-deps.sh installs it), started by the test itself on 127.0.0.1 and a free port, in a temp
 * dir removed by `stop()`. `initdb` refuses to run as root, so the cluster belongs to the `postgres` user (created
 * by the package) and is run through `runuser` when the tests run as root. Trust authentication on loopback only;
 * fsync stays on unless `volatile` (contract tests; the end-to-end tests kill nodes, not the machine, and run with
 * the production settings).
 * About 1 s from nothing to a database on this machine.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './cli.js';

const run = promisify(execFile);

/** Where Debian installs PostgreSQL 15's server programs. */
const BIN = '/usr/lib/postgresql/15/bin';

export interface PgTestServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (the maintenance database). */
  url: string;
  port: number;
  /**
   * Creates a database and returns its GRANARY_METADATA url: empty, or a copy of `template` (a database of this
   * server nobody is connected to; PostgreSQL copies it file by file, much faster than migrating again).
   */
  createDatabase(name?: string, template?: string): Promise<string>;
  /** Stops the server (fast shutdown) and removes its files. */
  stop(): Promise<void>;
  /** Stops the server (fast shutdown) and keeps its files: an outage; `start` ends it. */
  halt(): Promise<void>;
  /** Starts a halted server again, on the same port and files; resolves once it accepts connections. */
  start(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP to the postmaster and every backend): connections stay open but nothing answers,
   * as on a hung machine; `thaw` (SIGCONT) ends it.
   */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
}

/** The uid/gid of the `postgres` user when we are root (initdb refuses root), none otherwise (run as ourselves). */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

export interface PgServerOptions {
  /**
   * Skip fsync (`fsync=off`, `synchronous_commit=off`): for store contract tests, which never crash the machine and
   * create many databases. Default false: the production settings (the end-to-end and bench servers).
   */
  volatile?: boolean;
}

/** Starts a throw-away PostgreSQL cluster. */
export async function startPgServer(opts: PgServerOptions = {}): Promise<PgTestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'granary-pg-'));
  const data = join(dir, 'data');
  const user = await postgresUser();
  if (user) await chown(dir, user.uid, user.gid);
  await chmod(dir, 0o700);
  // The server and initdb run as the postgres user (spawned with its uid: a signal reaches postgres itself).
  const env = { ...process.env, HOME: dir };
  await run(join(BIN, 'initdb'), ['-D', data, '--auth=trust', '-U', 'postgres', '--encoding=UTF8', '--locale=C', '--no-sync'], {
    ...user,
    env,
  });
  const port = await freePort();
  const args = [
    '-D', data,
    '-p', String(port),
    '-k', dir,
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'max_connections=300',
    '-c', 'shared_buffers=64MB',
    '-c', 'log_min_messages=warning',
    ...(opts.volatile ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
  ];
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  const kill = (): void => {
    child?.kill('SIGKILL');
  };
  process.once('exit', kill);
  /** Starts the postmaster and waits until it accepts connections (or died). */
  const launch = async (): Promise<void> => {
    const proc = spawn(join(BIN, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...user, env });
    child = proc;
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`postgres exited at start: ${stderr}`);
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        await c.end();
        break;
      } catch {
        await c.end().catch(() => undefined);
        if (i > 200) throw new Error(`postgres did not start: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  /** Fast shutdown of the running postmaster. */
  const halt = async (): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGINT'); // fast shutdown
    await exited;
  };
  /** The postmaster and its backends (children). */
  const processes = async (): Promise<number[]> => {
    const pid = child?.pid;
    if (pid === undefined) return [];
    const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(pid)]).catch(() => ({ stdout: '' }));
    return [pid, ...stdout.split(/\s+/).filter(Boolean).map(Number)];
  };
  /**
   * Sends `signal` to the postmaster and its backends (one that exited meanwhile is skipped). SIGSTOP lists them
   * again until no new one shows up: a backend forked between the listing and the postmaster's stop (the server's
   * pool still connecting) would otherwise keep answering.
   */
  let frozen = false;
  const signalAll = async (signal: NodeJS.Signals): Promise<void> => {
    const sent = new Set<number>();
    for (;;) {
      const pids = (await processes()).filter((pid) => !sent.has(pid));
      if (pids.length === 0) break;
      for (const pid of pids) {
        sent.add(pid);
        try {
          process.kill(pid, signal);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
      }
      if (signal !== 'SIGSTOP') break;
    }
    frozen = signal === 'SIGSTOP';
  };
  await launch();
  return {
    url,
    port,
    async createDatabase(name = `t_${randomBytes(6).toString('hex')}`, template?: string): Promise<string> {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${name}"${template !== undefined ? ` TEMPLATE "${template}"` : ''}`);
      } finally {
        await c.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop(): Promise<void> {
      process.removeListener('exit', kill);
      if (frozen) await signalAll('SIGCONT');
      await halt();
      await rm(dir, { recursive: true, force: true });
    },
    halt,
    start: launch,
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
  };
}
