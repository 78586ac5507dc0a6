/**
 * Decoding HEIC (HEIF with HEVC) images, which sharp's prebuilt libvips cannot (it reads their metadata only;
 * docs/processing/images.md "HEIC"): the Debian
 * `heif-convert` program (libheif-examples; path GRANARY_HEIF_CONVERT or found on PATH) writes the primary image
 * as a PNG in the run's temp dir, which image commands then decode like any PNG. libheif applies the HEIF
 * rotation/mirror properties, so the PNG is upright.
 *
 * The subprocess gets an argv array (no shell), the source's own local file as input, the fop time limit, and is
 * killed (SIGKILL) when the run is aborted or times out. It runs inside the image pool slot of the command that
 * needs it, so at most GRANARY_FOP_CONCURRENCY conversions run at once. The source header was checked against
 * the pixel limits (readHeader) before this is called.
 */
import { toolEnv } from './tool-env.js';
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { Errors } from '../errors.js';
import type { FopContext, FopSource } from './types.js';

const STDERR_BYTES = 4096;

function missingTool(cmd: string): Error {
  return Errors.unsupportedImage(
    `${cmd}: decoding HEIC needs heif-convert (Debian/Ubuntu package libheif-examples); install it or set GRANARY_HEIF_CONVERT to its path`,
  );
}

/** Converts a HEIC source to a PNG temp file of the run and returns its path. 415 without heif-convert; 400 when it fails. */
export async function heifToPng(cmd: string, source: FopSource, ctx: FopContext): Promise<string> {
  const tool = ctx.tools.heifConvert;
  if (!tool) throw missingTool(cmd);
  if (ctx.signal.aborted) throw Errors.fopFailed(`${cmd}: processing timed out`);
  const input = await source.file();
  const output = ctx.tempFile('.png');
  await new Promise<void>((resolve, reject) => {
    const child = spawn(tool, [input, output], { stdio: ['ignore', 'ignore', 'pipe'], env: toolEnv() });
    let stderr = '';
    let settled = false;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    const kill = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    const onAbort = (): void => {
      kill();
      finish(Errors.fopFailed(`${cmd}: processing timed out`));
    };
    const timer = setTimeout(onAbort, ctx.limits.timeoutSeconds * 1000);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < STDERR_BYTES) stderr += chunk;
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      kill();
      finish(err.code === 'ENOENT' || err.code === 'EACCES' ? missingTool(cmd) : Errors.fopFailed(`${cmd}: heif-convert: ${err.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) return finish();
      const why = stderr.trim().split('\n').filter(Boolean).pop() ?? `exit code ${String(code)}`;
      finish(Errors.fopFailed(`${cmd}: heif-convert cannot decode the image: ${why}`));
    });
  });
  // With several top-level images, heif-convert numbers its outputs (`out-1.png`, …): the first is the primary.
  for (const candidate of [output, output.replace(/\.png$/, '-1.png')]) {
    if ((await stat(candidate).catch(() => undefined))?.isFile()) return candidate;
  }
  throw Errors.fopFailed(`${cmd}: heif-convert wrote no image`);
}
