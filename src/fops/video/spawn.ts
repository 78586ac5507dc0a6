/**
 * Running ffmpeg and ffprobe for the audio/video fops (docs/development/kodo-protocol.md §10.4, §10.6): one subprocess helper.
 *
 * - The program comes from `ctx.tools` (GRANARY_FFMPEG / GRANARY_FFPROBE or PATH); absent, or `spawn` failing
 *   with ENOENT/EACCES → 415 `videoToolMissing` naming the setting and the Debian package.
 * - argv arrays only (never a shell); stdin closed; stdout collected up to `maxStdout` bytes; stderr keeps its
 *   last 16 KiB for error messages.
 * - `ctx.signal` (the run's time limit or shutdown) SIGKILLs the child and rejects with 400 `timed out`.
 * - Exit code ≠ 0 → 400 `videoFailed` with the last lines of stderr (the input is bad: not a media file, no
 *   such stream, …); paths of the run (blob, temp files) are replaced by neutral names so no path leaks.
 *   Killed by a signal we did not send, or any other spawn failure → 599 (our own failure).
 * - With `ctx.tempFile` (every run of executeFops), the child is recorded in the run's temp dir so that a later
 *   start can kill it if this process dies while it runs (leftovers.ts).
 */
import { toolEnv } from '../tool-env.js';
import { spawn } from 'node:child_process';
import { Errors } from '../../errors.js';
import type { FopContext } from '../types.js';
import { recordSubprocess } from './leftovers.js';

/** Which program to run. */
export type VideoTool = 'ffmpeg' | 'ffprobe';

const SETTING: Record<VideoTool, string> = { ffmpeg: 'GRANARY_FFMPEG', ffprobe: 'GRANARY_FFPROBE' };
const STDERR_KEEP = 16 * 1024;

export interface ToolOptions {
  /** Largest stdout kept, bytes (default 8 MiB); more → 400. */
  maxStdout?: number;
  /** Paths to hide in error messages → the neutral name shown instead (e.g. the blob path → `input`). */
  redact?: Record<string, string>;
}

/** The error for a program that is not installed. */
export function toolMissing(cmd: string, tool: VideoTool): Error {
  return Errors.videoToolMissing(
    `${cmd}: ${tool} is not available (install the Debian package ffmpeg, or set ${SETTING[tool]} to the program's path)`,
  );
}

/** The last meaningful lines of ffmpeg's stderr, with paths and pointer addresses removed. */
export function stderrSummary(stderr: string, redact: Record<string, string> = {}): string {
  let text = stderr;
  // Longest first, so a path is not partly replaced by a shorter prefix of it.
  for (const [path, name] of Object.entries(redact).sort((a, b) => b[0].length - a[0].length)) {
    if (path !== '') text = text.split(`file:${path}`).join(name).split(path).join(name);
  }
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.replace(/ @ 0x[0-9a-f]+\]/g, ']').trim())
    .filter((l) => l !== '');
  const summary = lines.slice(-3).join('; ');
  return summary.length > 400 ? `${summary.slice(0, 400)}…` : summary || 'no error message';
}

/** Runs `tool` with `args`; resolves with its stdout once it exits with 0 (see the module comment for errors). */
export function runTool(
  cmd: string,
  tool: VideoTool,
  args: string[],
  ctx: Pick<FopContext, 'signal' | 'tools'> & Partial<Pick<FopContext, 'tempFile'>>,
  opts: ToolOptions = {},
): Promise<Buffer> {
  const program = ctx.tools[tool];
  if (!program) return Promise.reject(toolMissing(cmd, tool));
  const timedOut = (): Error => Errors.videoFailed(`${cmd}: processing timed out`);
  if (ctx.signal.aborted) return Promise.reject(timedOut());
  const maxStdout = opts.maxStdout ?? 8 * 1024 * 1024;
  return new Promise<Buffer>((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], shell: false, windowsHide: true, env: toolEnv() });
    if (ctx.tempFile && child.pid !== undefined) {
      try {
        recordSubprocess(ctx.tempFile('.pid'), child.pid, [program, ...args]);
      } catch {
        // best effort: only the clean-up after a crash depends on it
      }
    }
    const out: Buffer[] = [];
    let outBytes = 0;
    let stderr = '';
    let failure: Error | undefined;
    const kill = (err: Error): void => {
      failure ??= err;
      child.kill('SIGKILL');
    };
    const onAbort = (): void => kill(timedOut());
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) kill(Errors.videoFailed(`${cmd}: ${tool} wrote more than ${maxStdout} bytes of output`));
      else out.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.length > STDERR_KEEP * 2) stderr = stderr.slice(-STDERR_KEEP);
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      ctx.signal.removeEventListener('abort', onAbort);
      if (err.code === 'ENOENT' || err.code === 'EACCES') reject(toolMissing(cmd, tool));
      else reject(Errors.internal(`${cmd}: cannot run ${tool}: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      ctx.signal.removeEventListener('abort', onAbort);
      if (failure) reject(failure);
      else if (code === 0) resolve(Buffer.concat(out));
      else if (code === null) reject(Errors.internal(`${cmd}: ${tool} was killed by ${signal ?? 'a signal'}`));
      else reject(Errors.videoFailed(`${cmd}: ${stderrSummary(stderr, opts.redact)}`));
    });
  });
}
