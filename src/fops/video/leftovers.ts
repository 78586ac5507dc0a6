/**
 * ffmpeg/ffprobe subprocesses left running by a server that died (SIGKILL, power loss of the process only):
 * a child process is not killed with its parent, so a transcode of a crashed server would go on using CPU (and
 * disk, writing into a temp dir the next start removes) beside the job the next start runs again.
 *
 * Each subprocess is recorded in its run's temp dir as `<n>.pid` = `{"pid": <number>, "argv": [program, ...args]}`
 * (spawn.ts). Before the temp dirs of a process that is gone are removed (execute.ts `clearFopTemp`: at start and
 * by the reaper, only dirs of dead processes, never a live worker's), every recorded process that
 * still runs with exactly that argv (read from `/proc/<pid>/cmdline`, so a reused pid is never hit) is killed
 * with SIGKILL. Where `/proc` does not exist nothing is killed.
 */
import { writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Records a started subprocess in `pidFile` (a temp file of its run). Synchronous, so no await separates it from the spawn. */
export function recordSubprocess(pidFile: string, pid: number, argv: string[]): void {
  writeFileSync(pidFile, JSON.stringify({ pid, argv }));
}

/** The argv of process `pid` as the kernel shows it, or undefined when there is no such process (or no /proc). */
async function argvOf(pid: number): Promise<string[] | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return text.split('\0').slice(0, -1);
  } catch {
    return undefined;
  }
}

/** Kills the recorded subprocesses in `dirs` (run temp dirs) that still run; returns how many it killed. */
export async function killLeftoverSubprocesses(dirs: string[]): Promise<number> {
  let killed = 0;
  for (const dir of dirs) {
    const files = await readdir(dir).catch(() => [] as string[]);
    for (const f of files.filter((n) => n.endsWith('.pid'))) {
      let rec: { pid?: unknown; argv?: unknown };
      try {
        rec = JSON.parse(await readFile(join(dir, f), 'utf8')) as typeof rec;
      } catch {
        continue; // torn write: the process had only just started
      }
      const { pid, argv } = rec;
      if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 1 || !Array.isArray(argv)) continue;
      const now = await argvOf(pid);
      if (!now || now.length !== argv.length || now.some((a, i) => a !== argv[i])) continue;
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // already gone
      }
    }
  }
  return killed;
}
