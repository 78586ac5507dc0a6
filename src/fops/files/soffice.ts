/**
 * Running LibreOffice headless for document conversion (docs/development/kodo-protocol.md §10.9), like the
 * ffmpeg helper (../video/spawn.ts): argv only, no shell, stdin closed.
 *
 * - The program is `ctx.tools.soffice` (GRANARY_SOFFICE or `soffice` on PATH); absent, or ENOENT/EACCES at
 *   spawn → 415 naming GRANARY_SOFFICE and the Debian packages.
 * - Each run has its own profile (`-env:UserInstallation=file://<temp dir of the run>`) and HOME, so parallel
 *   runs never share LibreOffice's user directory or its lock.
 * - The child runs in its own process group: the run's time limit or a shutdown (`ctx.signal`) SIGKILLs the
 *   whole group (soffice starts oosplash and soffice.bin), then rejects with 400 `timed out`.
 * - Exit code ≠ 0, or no output file (soffice exits 0 when it cannot read a document) → 400 naming the
 *   format; killed by a signal we did not send, or another spawn failure → 599.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Errors } from '../../errors.js';
import type { FopContext } from '../types.js';
import { recordSubprocess } from '../video/leftovers.js';
import { stderrSummary } from '../video/spawn.js';

const STDERR_KEEP = 8 * 1024;

/** The error for a missing LibreOffice. */
export function sofficeMissing(cmd: string): Error {
  return Errors.videoToolMissing(
    `${cmd}: LibreOffice is not available (install the Debian packages libreoffice-core-nogui, libreoffice-writer-nogui, libreoffice-calc-nogui and libreoffice-impress-nogui, or set GRANARY_SOFFICE to soffice's path)`,
  );
}

/**
 * Converts the local file `input` (its extension tells LibreOffice the format) to `format` (e.g. `pdf`);
 * resolves with the output file's path, in a temp dir of the run.
 */
export async function convertDocument(cmd: string, input: string, format: string, ctx: FopContext): Promise<string> {
  const program = ctx.tools.soffice;
  if (!program) throw sofficeMissing(cmd);
  const timedOut = (): Error => Errors.fopFailed(`${cmd}: processing timed out`);
  if (ctx.signal.aborted) throw timedOut();
  const profile = ctx.tempFile('-profile');
  const outDir = ctx.tempFile('-out');
  await mkdir(profile, { recursive: true });
  await mkdir(outDir, { recursive: true });
  const args = [
    '--headless', '--invisible', '--norestore', '--nologo', '--nolockcheck', '--nodefault',
    `-env:UserInstallation=file://${profile}`,
    '--convert-to', format,
    '--outdir', outDir,
    input,
  ];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(program, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      shell: false,
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: profile, LANG: 'C.UTF-8' },
    });
    if (child.pid !== undefined) {
      try {
        recordSubprocess(ctx.tempFile('.pid'), child.pid, [program, ...args]);
      } catch {
        // best effort: only the clean-up after a crash depends on it
      }
    }
    let stderr = '';
    let failure: Error | undefined;
    const onAbort = (): void => {
      failure ??= timedOut();
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.length > STDERR_KEEP * 2) stderr = stderr.slice(-STDERR_KEEP);
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      ctx.signal.removeEventListener('abort', onAbort);
      if (err.code === 'ENOENT' || err.code === 'EACCES') reject(sofficeMissing(cmd));
      else reject(Errors.internal(`${cmd}: cannot run soffice: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      ctx.signal.removeEventListener('abort', onAbort);
      if (failure) reject(failure);
      else if (code === 0) resolve();
      else if (code === null) reject(Errors.internal(`${cmd}: soffice was killed by ${signal ?? 'a signal'}`));
      else reject(Errors.fopFailed(`${cmd}: ${stderrSummary(stderr, { [input]: 'input', [outDir]: 'output', [profile]: 'profile' })}`));
    });
  });
  const produced = (await readdir(outDir)).filter((n) => n.endsWith(`.${format}`));
  if (produced.length !== 1) throw Errors.fopFailed(`${cmd}: the document could not be converted (not a readable document of its format?)`);
  return join(outDir, produced[0]!);
}
