/**
 * A real S3-compatible server for tests: Ceph's radosgw (Debian 12 packages `radosgw`, `ceph-mon`, `ceph-osd`,
 * `ceph-common`; scripts/ensure-test-deps.sh installs them), started by the test itself on loopback.
 *
 * The cluster is the smallest Ceph can run: one monitor, one OSD on `memstore` (RAM, capped at 1 GiB), pool size 1,
 * no manager, cephx keys made up front, radosgw with the beast frontend on 127.0.0.1 and a free port. Everything
 * lives in a temp dir removed by `stop()`. The daemons run in the foreground as children of the test process and
 * are killed by pid (SIGKILL: nothing to keep) at `stop()` or when the test process exits.
 * About 5 s from nothing to a bucket on this machine (docs/development/s3-server.md has the investigation and figures).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './cli.js';

const run = promisify(execFile);

export interface S3TestServer {
  /** `http://127.0.0.1:<port>` (path-style addressing). */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A new S3 client for this server. */
  client(): S3Client;
  /** Creates a bucket (names: 3–63 characters, lower case) and returns its name. */
  createBucket(name?: string): Promise<string>;
  /** `s3://<bucket>[/<prefix>]?endpoint=…&region=…&forcePathStyle=true`: a GRANARY_BLOBS value. */
  blobsUrl(bucket: string, prefix?: string): string;
  /** The environment a Granary needs to reach this server (GRANARY_BLOBS plus the AWS_* credentials). */
  granaryEnv(bucket: string, prefix?: string): Record<string, string>;
  /** SIGSTOPs radosgw: it keeps accepting TCP connections (the kernel does) and answers nothing. */
  freeze(): void;
  /** SIGCONTs radosgw: it answers again (what it received meanwhile included). */
  thaw(): void;
  stop(): Promise<void>;
}

function cephConf(dir: string, fsid: string, monPort: number, rgwPort: number, memstoreBytes: number): string {
  return `[global]
fsid = ${fsid}
mon host = [v2:127.0.0.1:${monPort}]
public addr = 127.0.0.1
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
pid file = ${dir}/run/$name.pid
keyring = ${dir}/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
paxos propose interval = 0.05
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd crush chooseleaf type = 0
osd fast shutdown = true
[mon]
mon data = ${dir}/mon
mon cluster log file = ${dir}/log/cluster.log
[osd]
osd data = ${dir}/osd0
osd objectstore = memstore
memstore device bytes = ${memstoreBytes}
osd max object name len = 460
osd max object namespace len = 64
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${dir}/rgw
rgw enable usage log = false
`;
}

/** Runs a Ceph command line tool; a failure names the command and its stderr. */
async function ceph(cmd: string, args: string[], timeoutMs = 30_000): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { timeout: timeoutMs });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.stderr ?? e.message}`, { cause: err });
  }
}

/** Waits until radosgw answers HTTP at `endpoint` (any status), or the daemon exits. */
async function waitForHttp(endpoint: string, daemon: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (daemon.exitCode !== null || daemon.signalCode !== null) {
      const log = await readFile(logFile, 'utf8').catch(() => '');
      throw new Error(`radosgw exited early:\n${log.slice(-2000)}`);
    }
    try {
      await fetch(endpoint);
      return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`radosgw did not answer at ${endpoint} within 45 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts a throw-away Ceph cluster with radosgw on loopback and an S3 user; resolves once radosgw answers.
 * `memstoreBytes`: the OSD's RAM cap (default 1 GiB; the S3 bench asks for more: overwritten and deleted tails
 * stay in the OSD until radosgw's deferred garbage collection). Needs root (the daemons run as the calling user; the tests run as root on our machines).
 */
export async function startS3Server(opts: { memstoreBytes?: number } = {}): Promise<S3TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'granary-ceph-'));
  const daemons: ChildProcess[] = [];
  const killAll = (): void => {
    for (const d of daemons) if (d.exitCode === null && d.signalCode === null) d.kill('SIGKILL');
  };
  process.once('exit', killAll);
  const exits = (): Promise<unknown[]> =>
    Promise.all(
      daemons.map((d) =>
        d.exitCode !== null || d.signalCode !== null ? Promise.resolve() : new Promise((r) => d.once('exit', r)),
      ),
    );
  const stop = async (): Promise<void> => {
    killAll();
    await exits();
    process.removeListener('exit', killAll);
    await rm(dir, { recursive: true, force: true });
  };
  const daemon = (cmd: string, args: string[]): ChildProcess => {
    const child = spawn(cmd, ['-f', '-c', conf, ...args], { stdio: 'ignore' });
    daemons.push(child);
    return child;
  };
  const conf = join(dir, 'ceph.conf');
  try {
    const [monPort, rgwPort] = [await freePort(), await freePort()];
    const fsid = randomUUID();
    for (const sub of ['run', 'log', 'mon', 'osd0', 'rgw']) await mkdir(join(dir, sub));
    await writeFile(conf, cephConf(dir, fsid, monPort, rgwPort, opts.memstoreBytes ?? 1024 ** 3));
    // Every key in one keyring, imported by the monitor's mkfs: no `ceph auth` round trips later.
    const keyring = join(dir, 'keyring');
    await ceph('ceph-authtool', ['--create-keyring', keyring, '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *']);
    const caps: Record<string, string[]> = {
      'client.admin': ['--cap', 'mon', 'allow *', '--cap', 'osd', 'allow *', '--cap', 'mgr', 'allow *'],
      'osd.0': ['--cap', 'mon', 'allow profile osd', '--cap', 'osd', 'allow *', '--cap', 'mgr', 'allow profile osd'],
      'client.rgw': ['--cap', 'mon', 'allow rw', '--cap', 'osd', 'allow rwx'],
    };
    for (const [name, c] of Object.entries(caps)) await ceph('ceph-authtool', [keyring, '--gen-key', '-n', name, ...c]);
    const monmap = join(dir, 'monmap');
    await ceph('monmaptool', ['--create', '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, '--fsid', fsid, monmap]);
    await ceph('ceph-mon', ['-c', conf, '--mkfs', '-i', 'a', '--monmap', monmap, '--keyring', keyring]);
    daemon('ceph-mon', ['-i', 'a']);

    const osdUuid = randomUUID();
    const id = await ceph('ceph', ['-c', conf, '--connect-timeout', '20', 'osd', 'new', osdUuid]);
    await ceph('ceph-osd', ['-c', conf, '-i', id, '--mkfs', '--osd-uuid', osdUuid]);
    daemon('ceph-osd', ['-i', id]);
    const rgw = daemon('radosgw', ['-n', 'client.rgw']);

    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitForHttp(endpoint, rgw, join(dir, 'log', 'client.rgw.log'));
    const accessKeyId = `GRANARY${randomBytes(6).toString('hex').toUpperCase()}`;
    const secretAccessKey = randomBytes(20).toString('hex');
    await ceph('radosgw-admin', ['-c', conf, 'user', 'create', '--uid=granary', '--display-name=granary',
      `--access-key=${accessKeyId}`, `--secret-key=${secretAccessKey}`]);

    const region = 'us-east-1';
    const client = (): S3Client =>
      new S3Client({ endpoint, region, forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
    const blobsUrl = (bucket: string, prefix?: string): string =>
      `s3://${bucket}${prefix ? `/${prefix}` : ''}?endpoint=${encodeURIComponent(endpoint)}&region=${region}&forcePathStyle=true`;
    return {
      endpoint,
      region,
      accessKeyId,
      secretAccessKey,
      client,
      createBucket: async (name = `granary-${randomBytes(4).toString('hex')}`) => {
        const c = client();
        try {
          await c.send(new CreateBucketCommand({ Bucket: name }));
        } finally {
          c.destroy();
        }
        return name;
      },
      blobsUrl,
      granaryEnv: (bucket, prefix) => ({
        GRANARY_BLOBS: blobsUrl(bucket, prefix),
        AWS_ACCESS_KEY_ID: accessKeyId,
        AWS_SECRET_ACCESS_KEY: secretAccessKey,
      }),
      freeze: () => void rgw.kill('SIGSTOP'),
      thaw: () => void rgw.kill('SIGCONT'),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
