/**
 * `vframe/<jpg|png>/offset/<seconds>[/w/<1..3840>][/h/<1..2160>][/rotate/<90|180|270|auto>]` (docs/development/kodo-protocol.md §10.6):
 * one frame of the video at `offset` (millisecond precision), on download URLs and as a persistent command.
 *
 * - Without `rotate` the frame is taken as stored (no rotation from the container's display matrix); `auto`
 *   applies that rotation; 90/180/270 turn clockwise. Rotation comes first, so `w`/`h` are the output's size.
 * - `w` and `h` together: exactly that size; one of them alone: the other follows the aspect ratio.
 * - Errors (400): a bad parameter (at parse), an offset past the end of the video (no frame there), a source
 *   with no video stream or that is not a media file. 415 when ffmpeg is not installed.
 */
import { stat } from 'node:fs/promises';
import { Errors } from '../../errors.js';
import type { FopCommand } from '../types.js';
import { checkVideoSource, FFMPEG_PRELUDE, fileUrl, inputGuard, pairs, parseIntIn, parseSeconds, secondsArg, threadArgs } from './common.js';
import { runTool } from './spawn.js';

export interface VframeParams {
  format: 'jpg' | 'png';
  /** Milliseconds from the start. */
  offsetMs: number;
  w?: number;
  h?: number;
  rotate?: 90 | 180 | 270 | 'auto';
}

const bad = (what: string): never => {
  throw Errors.badRequest(`vframe: ${what}`);
};

export function parseVframe(args: string[]): VframeParams {
  const [format, ...rest] = args;
  if (format !== 'jpg' && format !== 'png') return bad(`format must be jpg or png, got ${JSON.stringify(format ?? '')}`);
  let offsetMs: number | undefined;
  const p: Partial<VframeParams> = {};
  for (const [k, v] of pairs('vframe', rest)) {
    if (k === 'offset') offsetMs = parseSeconds('vframe', 'offset', v);
    else if (k === 'w') p.w = parseIntIn('vframe', 'w', v, 1, 3840);
    else if (k === 'h') p.h = parseIntIn('vframe', 'h', v, 1, 2160);
    else if (k === 'rotate') {
      if (!['90', '180', '270', 'auto'].includes(v)) bad(`rotate must be 90, 180, 270 or auto, got ${JSON.stringify(v)}`);
      p.rotate = v === 'auto' ? 'auto' : (Number(v) as 90 | 180 | 270);
    } else bad(`unknown parameter ${JSON.stringify(k)}`);
  }
  if (offsetMs === undefined) return bad('offset is required');
  return { format, offsetMs, ...p };
}

/** The `-vf` chain of a vframe: rotation, then scaling (empty when neither is asked). */
export function vframeFilters(p: VframeParams): string {
  const f: string[] = [];
  if (p.rotate === 90) f.push('transpose=clock');
  else if (p.rotate === 180) f.push('hflip', 'vflip');
  else if (p.rotate === 270) f.push('transpose=cclock');
  if (p.w !== undefined || p.h !== undefined) f.push(`scale=${p.w ?? -1}:${p.h ?? -1}`);
  return f.join(',');
}

/** The ffmpeg argv of a vframe from `input` to `output` (both local paths of the run). */
export function vframeArgs(p: VframeParams, input: string, output: string, threads: number): string[] {
  const vf = vframeFilters(p);
  return [
    ...FFMPEG_PRELUDE,
    ...threadArgs(threads),
    ...(p.rotate === 'auto' ? [] : ['-noautorotate']),
    ...inputGuard(),
    '-ss', secondsArg(p.offsetMs),
    '-i', fileUrl(input),
    '-map', '0:v:0',
    '-frames:v', '1',
    '-an', '-sn', '-dn',
    ...(vf ? ['-vf', vf] : []),
    ...(p.format === 'jpg' ? ['-c:v', 'mjpeg', '-q:v', '2', '-pix_fmt', 'yuvj420p'] : ['-c:v', 'png']),
    '-map_metadata', '-1',
    '-threads', String(threads),
    '-f', 'image2', '-update', '1',
    fileUrl(output),
  ];
}

export const vframe: FopCommand<VframeParams> = {
  name: 'vframe',
  pool: 'video',
  parse: parseVframe,
  async run(source, p, ctx) {
    checkVideoSource('vframe', source, ctx.limits);
    const input = await source.file();
    const output = ctx.tempFile(`.${p.format}`);
    try {
      await runTool('vframe', 'ffmpeg', vframeArgs(p, input, output, ctx.limits.videoThreads), ctx, { redact: { [input]: 'input', [output]: 'output' } });
    } catch (err) {
      if (err instanceof Error && /matches no streams/.test(err.message)) throw Errors.videoFailed('vframe: the source has no video stream');
      throw err;
    }
    const size = await stat(output).then((s) => s.size, () => 0);
    if (size === 0) throw Errors.videoFailed(`vframe: offset ${secondsArg(p.offsetMs)} s is past the end of the video (no frame there)`);
    return { file: output, size, contentType: p.format === 'jpg' ? 'image/jpeg' : 'image/png' };
  },
};
