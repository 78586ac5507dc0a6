/**
 * `vsample/<jpg|png>[/ss/<s>][/t/<s>][/s/<W>x<H>][/rotate/<90|180|270|auto>][/interval/<s>][/savePattern/<b64>]`
 * (also `pattern/<b64>`) (docs/development/kodo-protocol.md §10.6): frames of the video every `interval` seconds
 * (default 5, at least 0.1) from `ss` (default 0) for `t` seconds (default: to the end), each stored as its own
 * object of the output's bucket named by the pattern (`$(count)`: 000000, 000001, …; default
 * `<output key>/$(count).<jpg|png>`). Persistent only; the job item names the first frame (`key`, `hash`) and
 * lists every frame in `keys`.
 *
 * - `s`: `W x H` exactly, `W x` or `x H` keeping the aspect ratio; each side 20..3840.
 * - `rotate` as vframe (clockwise; `auto` follows the container's display matrix; none: frames as stored).
 * - At most GRANARY_FOP_MAX_FRAMES frames: more → 400 (raise `interval` or set `t`).
 * - `frames/<n>` (evenly spread frames) is not supported: 400.
 * Errors: 400 bad parameters, a source without video, no frame in the range; putObject's errors.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Errors } from '../../errors.js';
import type { FopCommand } from '../types.js';
import { checkVideoSource, FFMPEG_PRELUDE, fileUrl, inputGuard, pairs, parseIntIn, parseSeconds, secondsArg, threadArgs } from './common.js';
import { parseKeyPattern, patternKey } from './key-pattern.js';
import { runTool } from './spawn.js';

export interface VsampleParams {
  format: 'jpg' | 'png';
  ssMs?: number;
  tMs?: number;
  w?: number;
  h?: number;
  rotate?: 90 | 180 | 270 | 'auto';
  intervalMs: number;
  pattern?: string;
}

const bad = (what: string): never => {
  throw Errors.badRequest(`vsample: ${what}`);
};

export function parseVsample(args: string[]): VsampleParams {
  const [format, ...rest] = args;
  if (format !== 'jpg' && format !== 'png') return bad(`format must be jpg or png, got ${JSON.stringify(format ?? '')}`);
  const p: VsampleParams = { format, intervalMs: 5000 };
  for (const [k, v] of pairs('vsample', rest)) {
    switch (k) {
      case 'ss': p.ssMs = parseSeconds('vsample', 'ss', v); break;
      case 't': p.tMs = parseSeconds('vsample', 't', v, true); break;
      case 's': {
        const m = /^(\d*)x(\d*)$/.exec(v);
        if (!m || (m[1] === '' && m[2] === '')) return bad(`s must be <W>x<H>, <W>x or x<H>, got ${JSON.stringify(v)}`);
        if (m[1]) p.w = parseIntIn('vsample', 's width', m[1], 20, 3840);
        if (m[2]) p.h = parseIntIn('vsample', 's height', m[2], 20, 3840);
        break;
      }
      case 'rotate':
        if (!['90', '180', '270', 'auto'].includes(v)) bad(`rotate must be 90, 180, 270 or auto, got ${JSON.stringify(v)}`);
        p.rotate = v === 'auto' ? 'auto' : (Number(v) as 90 | 180 | 270);
        break;
      case 'interval':
        p.intervalMs = parseSeconds('vsample', 'interval', v, true);
        if (p.intervalMs < 100) bad(`interval must be at least 0.1 s, got ${v}`);
        break;
      case 'pattern':
      case 'savePattern':
        if (p.pattern !== undefined) bad('give one of pattern and savePattern');
        p.pattern = parseKeyPattern('vsample', k, v);
        break;
      case 'frames': return bad('frames is not supported by Granary; use interval');
      default: bad(`unknown parameter ${JSON.stringify(k)}`);
    }
  }
  return p;
}

/** The `-vf` chain: one frame per interval, rotation, scaling. */
export function vsampleFilters(p: VsampleParams): string {
  const f = [`fps=fps=1000/${p.intervalMs}`];
  if (p.rotate === 90) f.push('transpose=clock');
  else if (p.rotate === 180) f.push('hflip', 'vflip');
  else if (p.rotate === 270) f.push('transpose=cclock');
  if (p.w !== undefined || p.h !== undefined) f.push(`scale=${p.w ?? -1}:${p.h ?? -1}`);
  return f.join(',');
}

/** The ffmpeg argv writing at most `maxFrames + 1` frames as `<dir>/%06d.<fmt>`. */
export function vsampleArgs(p: VsampleParams, input: string, dir: string, maxFrames: number, threads: number): string[] {
  return [
    ...FFMPEG_PRELUDE,
    ...threadArgs(threads),
    ...(p.rotate === 'auto' ? [] : ['-noautorotate']),
    ...inputGuard(),
    ...(p.ssMs !== undefined ? ['-ss', secondsArg(p.ssMs)] : []),
    ...(p.tMs !== undefined ? ['-t', secondsArg(p.tMs)] : []),
    '-i', fileUrl(input),
    '-map', '0:v:0', '-an', '-sn', '-dn',
    '-vf', vsampleFilters(p),
    '-frames:v', String(maxFrames + 1),
    ...(p.format === 'jpg' ? ['-c:v', 'mjpeg', '-q:v', '2', '-pix_fmt', 'yuvj420p'] : ['-c:v', 'png']),
    '-map_metadata', '-1',
    '-threads', String(threads),
    '-f', 'image2', '-start_number', '0',
    fileUrl(join(dir, `%06d.${p.format}`)),
  ];
}

export const vsample: FopCommand<VsampleParams> = {
  name: 'vsample',
  pool: 'video',
  persistentOnly: true,
  storesItsOutputs: true,
  parse: parseVsample,
  async run(source, p, ctx) {
    const out = ctx.outputs;
    if (!out) throw Errors.badRequest('vsample: runs only as a persistent command (pfop or persistentOps): its frames are stored as objects');
    checkVideoSource('vsample', source, ctx.limits);
    const input = await source.file();
    const dir = ctx.tempFile('-frames');
    await mkdir(dir);
    const max = ctx.limits.maxFrames;
    try {
      await runTool('vsample', 'ffmpeg', vsampleArgs(p, input, dir, max, ctx.limits.videoThreads), ctx, { redact: { [input]: 'input', [dir]: 'output' } });
    } catch (err) {
      if (err instanceof Error && /matches no streams/.test(err.message)) throw Errors.videoFailed('vsample: the source has no video stream');
      throw err;
    }
    const frames = (await readdir(dir)).filter((f) => /^\d{6}\.(jpg|png)$/.test(f)).sort();
    if (frames.length === 0) throw Errors.videoFailed('vsample: no frame in that range (ss past the end of the video?)');
    if (frames.length > max) throw Errors.videoFailed(`vsample: more than ${max} frames (GRANARY_FOP_MAX_FRAMES); raise interval or set t`);
    const pattern = p.pattern ?? `${out.key}/$(count).${p.format}`;
    const contentType = p.format === 'jpg' ? 'image/jpeg' : 'image/png';
    for (const [i, f] of frames.entries()) {
      if (ctx.signal.aborted) throw Errors.videoFailed('vsample: processing timed out');
      await out.store(patternKey(pattern, i), join(dir, f), contentType);
    }
    return { json: { keys: out.stored.map((o) => o.key) } };
  },
};
