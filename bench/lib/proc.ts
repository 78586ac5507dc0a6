/**
 * Watching another process through /proc (Linux): resident memory (VmRSS) sampled on a timer, and CPU time
 * (user + system, all threads) to tell whether the server or the client was the busy side of a phase; and
 * dropping the page cache before a cold read.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';

/** Clock ticks per second used by /proc/<pid>/stat (USER_HZ; 100 on every mainstream Linux build). */
const TICKS_PER_SECOND = 100;

/** VmRSS of `pid` in bytes, or undefined when it cannot be read. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] !== undefined ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Seconds of the two clock-tick fields of /proc/<pid>/stat numbered `a` and `a + 1` overall (proc(5): 14–15 utime
 * and stime, 16–17 cutime and cstime), added.
 */
function statSeconds(pid: number, a: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the parenthesised command name start with field 3.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[a - 3]) + Number(rest[a - 2])) / TICKS_PER_SECOND;
}

/** CPU seconds (user + system) `pid` has used so far. */
export function cpuSeconds(pid: number): number {
  return statSeconds(pid, 14);
}

/** `read()`, or `fallback` when it throws (a process or thread that exited meanwhile). */
function readOr<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/** `pids` and all their live descendants (from /proc/<pid>/task/<tid>/children), each once. */
export function processTree(pids: number[]): Set<number> {
  const seen = new Set<number>();
  const visit = (pid: number): void => {
    if (seen.has(pid)) return;
    seen.add(pid);
    for (const tid of readOr(() => readdirSync(`/proc/${pid}/task`), [])) {
      const children = readOr(() => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8'), '');
      for (const child of children.split(' ')) if (child.trim() !== '') visit(Number(child));
    }
  };
  for (const pid of pids) visit(pid);
  return seen;
}

/**
 * CPU seconds (user + system) of `pid` and its live descendants (Granary's workers, an ffmpeg it runs); a process
 * that exits meanwhile counts 0.
 */
export function treeCpuSeconds(pid: number): number {
  return sumCpuSeconds(processTree([pid]));
}

/** CPU seconds of `pids` added; one that exited between the listing and the read counts 0. */
function sumCpuSeconds(pids: Iterable<number>): number {
  let total = 0;
  for (const pid of pids) total += readOr(() => cpuSeconds(pid), 0);
  return total;
}

/**
 * CPU seconds (user + system) of the children of `pid` that have exited and been waited for (cutime + cstime): a
 * process started per job, such as wrk, once it has exited and Node has reaped it.
 */
export function reapedChildrenCpuSeconds(pid: number): number {
  return statSeconds(pid, 16);
}

/** Samples VmRSS of `pid` every `intervalMs` until stopped; keeps the peak. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined;
  private peak = 0;
  private samples = 0;

  constructor(
    private readonly pid: number,
    private readonly intervalMs = 100,
  ) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    return this;
  }

  private sample(): void {
    const v = rssBytes(this.pid);
    if (v === undefined) return;
    this.samples++;
    if (v > this.peak) this.peak = v;
  }

  /** Stops sampling; returns the peak RSS in bytes and how many samples were taken. */
  stop(): { peakBytes: number; samples: number } {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    return { peakBytes: this.peak, samples: this.samples };
  }
}

/** CPU use of a process and its live descendants (Granary's workers) over a phase, as a fraction of one core. */
export class CpuMeter {
  private readonly startCpu: number;
  private readonly startMs = performance.now();

  constructor(private readonly pid: number) {
    this.startCpu = treeCpuSeconds(pid);
  }

  /** Average cores busy since construction (1.0 = one core fully used), the process's live descendants included. */
  cores(): number {
    const wall = (performance.now() - this.startMs) / 1000;
    return wall > 0 ? (treeCpuSeconds(this.pid) - this.startCpu) / wall : 0;
  }
}

/** Busy CPU seconds of the whole machine (all cores) so far, from /proc/stat. */
function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = f.reduce((s, v) => s + v, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return (total - idle) / TICKS_PER_SECOND;
}

/**
 * CPU used by processes other than `pids` over a phase (cores): other work on the machine that competed with
 * the measurement. Reads that stay well above zero mean the figures of that phase are noisy. With
 * `withReapedChildren`, the children of `pids` that exit and are reaped meanwhile count as theirs too (a load
 * generator started per job, wrk, whose pid does not exist yet when the meter starts).
 */
export class OtherLoadMeter {
  private readonly startMachine = machineBusySeconds();
  private readonly startOurs: number;
  private readonly startMs = performance.now();

  constructor(
    private readonly pids: number[],
    private readonly withReapedChildren = false,
  ) {
    this.startOurs = this.ours();
  }

  /** CPU seconds of `pids` and their live descendants (each once), plus the reaped children when asked. */
  private ours(): number {
    const reaped = this.withReapedChildren ? this.pids.reduce((s, pid) => s + reapedChildrenCpuSeconds(pid), 0) : 0;
    return sumCpuSeconds(processTree(this.pids)) + reaped;
  }

  cores(): number {
    const wall = (performance.now() - this.startMs) / 1000;
    if (wall <= 0) return 0;
    const other = machineBusySeconds() - this.startMachine - (this.ours() - this.startOurs);
    return Math.max(0, other / wall);
  }
}

/**
 * Empties the kernel's page cache (`sync`, then `3` into /proc/sys/vm/drop_caches; needs root), so the next read
 * of a file comes from the disk. False when that is not allowed here (then every read may be served from memory).
 * The whole machine's cache goes: other processes read from disk again too.
 */
export function dropPageCache(): boolean {
  try {
    execFileSync('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

/** Counters of one block device (/sys/dev/block/<major>:<minor>/stat; Linux Documentation/block/stat.rst). */
interface DiskCounters {
  writeIos: number;
  writeSectors: number;
  flushIos: number;
  /** Milliseconds the device had I/O in flight. */
  busyMs: number;
}

function readDisk(statPath: string): DiskCounters | undefined {
  try {
    const f = readFileSync(statPath, 'utf8').trim().split(/\s+/).map(Number);
    // Fields from 0: 4 write ios, 6 write sectors (512 B), 9 io_ticks, 15 flush ios (kernels ≥ 5.5; else NaN).
    return { writeIos: f[4] ?? 0, writeSectors: f[6] ?? 0, busyMs: f[9] ?? 0, flushIos: f[15] ?? NaN };
  } catch {
    return undefined;
  }
}

/**
 * What the disk holding `path` did between construction and `read()`: bytes written, write requests, cache
 * flushes (what fsync costs the device) and the share of the time it was busy. Undefined when the device's
 * counters cannot be read (not Linux, or a device without /sys stats). The whole device is counted: other
 * writers on it count too.
 */
export class DiskMeter {
  private readonly statPath: string | undefined;
  private readonly start: DiskCounters | undefined;
  private readonly startMs = performance.now();

  constructor(path: string) {
    let statPath: string | undefined;
    try {
      const dev = statSync(path).dev;
      // Linux dev_t: major in bits 8–19 (and 32+), minor in bits 0–7 and 20–31.
      const major = Number((BigInt(dev) >> 8n) & 0xfffn);
      const minor = Number((BigInt(dev) & 0xffn) | ((BigInt(dev) >> 12n) & 0xfff00n));
      statPath = `/sys/dev/block/${major}:${minor}/stat`;
    } catch {
      statPath = undefined;
    }
    this.statPath = statPath;
    this.start = statPath ? readDisk(statPath) : undefined;
  }

  read(): { writtenBytes: number; writeIos: number; flushes: number; busy: number } | undefined {
    const end = this.statPath ? readDisk(this.statPath) : undefined;
    if (!end || !this.start) return undefined;
    const wall = performance.now() - this.startMs;
    return {
      writtenBytes: (end.writeSectors - this.start.writeSectors) * 512,
      writeIos: end.writeIos - this.start.writeIos,
      flushes: end.flushIos - this.start.flushIos,
      busy: wall > 0 ? (end.busyMs - this.start.busyMs) / wall : 0,
    };
  }
}
