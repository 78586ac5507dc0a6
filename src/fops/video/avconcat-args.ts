/**
 * `avconcat/<1|2>/format/<fmt>[/index/<n>][/s/<W>x<H>][/addAudio/<0|1>]/<b64 resource>/…`
 * (docs/development/kodo-protocol.md §10.6): the parameter parser and the ffmpeg argv; avconcat.ts resolves the
 * resources and runs it.
 *
 * - Resources (1..20, URL-safe base64): `kodo://<bucket>/<key>` or an http(s) download URL on this server, both
 *   naming an entry of the source's own bucket (checked when the job runs).
 * - `index` (1-based, default 1): where the source goes among the resources.
 * - `format`: mp4, flv, webm (video and audio) or mp3, aac, m4a, ogg, wav, flac (audio only).
 * - `s` (mode 2 only): the output size; default the first video input's. Inputs are scaled to fit and padded.
 * - `addAudio` (mode 2 only, default 1): inputs without audio get silence, so the output keeps its audio; with 0
 *   the output has no audio when any input lacks it.
 * Errors: 400 `avconcat: …` naming the parameter.
 */
import { urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors } from '../../errors.js';
import { AVTHUMB_FORMATS } from './avthumb-args.js';
import { FFMPEG_PRELUDE, fileUrl, inputGuard, parseIntIn, threadArgs } from './common.js';

/** Most resources besides the source. */
export const MAX_CONCAT_RESOURCES = 20;
const FORMATS = ['mp4', 'flv', 'webm', 'mp3', 'aac', 'm4a', 'ogg', 'wav', 'flac'];

export interface AvconcatParams {
  mode: 1 | 2;
  format: string;
  /** 1-based position of the source. */
  index: number;
  size?: { w: number; h: number };
  addAudio: boolean;
  /** The decoded resource URLs, in order. */
  resources: string[];
}

const bad = (what: string): never => {
  throw Errors.badRequest(`avconcat: ${what}`);
};

export function parseAvconcat(args: string[]): AvconcatParams {
  const [mode, ...rest] = args;
  if (mode !== '1' && mode !== '2') return bad(`mode must be 1 or 2, got ${JSON.stringify(mode ?? '')}`);
  const p: Partial<AvconcatParams> & { resources: string[] } = { mode: Number(mode) as 1 | 2, addAudio: true, resources: [] };
  const seen = new Set<string>();
  let index: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const k = rest[i] as string;
    if (['format', 'index', 's', 'addAudio'].includes(k)) {
      const v = rest[++i];
      if (v === undefined) return bad(`parameter ${k} has no value`);
      if (seen.has(k)) bad(`parameter ${k} given twice`);
      seen.add(k);
      if (k === 'format') {
        if (!FORMATS.includes(v)) bad(`unsupported format ${JSON.stringify(v)} (supported: ${FORMATS.join(', ')})`);
        p.format = v;
      } else if (k === 'index') index = parseIntIn('avconcat', 'index', v, 1, MAX_CONCAT_RESOURCES + 1);
      else if (k === 's') {
        const m = /^(\d+)x(\d+)$/.exec(v);
        if (!m) return bad(`s must be <W>x<H>, got ${JSON.stringify(v)}`);
        p.size = { w: parseIntIn('avconcat', 's width', m[1] as string, 20, 3840), h: parseIntIn('avconcat', 's height', m[2] as string, 20, 3840) };
        if (p.size.w % 2 === 1 || p.size.h % 2 === 1) bad('s needs an even width and height');
      } else {
        if (v !== '0' && v !== '1') bad(`addAudio must be 0 or 1, got ${JSON.stringify(v)}`);
        p.addAudio = v === '1';
      }
      continue;
    }
    let url: string;
    try {
      url = urlsafeB64DecodeText(k);
    } catch {
      return bad(`${JSON.stringify(k)} is neither a parameter nor URL-safe base64 of a resource URL`);
    }
    if (!/^(kodo:\/\/[^/]+\/.+|https?:\/\/.+)$/i.test(url)) bad(`a resource must be kodo://<bucket>/<key> or an http(s) URL, got ${JSON.stringify(url)}`);
    p.resources.push(url);
  }
  if (p.format === undefined) return bad('format is required');
  if (p.resources.length === 0) bad('give at least one resource to concatenate with the source');
  if (p.resources.length > MAX_CONCAT_RESOURCES) bad(`at most ${MAX_CONCAT_RESOURCES} resources besides the source`);
  if (p.mode === 1 && (seen.has('s') || seen.has('addAudio'))) bad('s and addAudio need mode 2');
  p.index = index ?? 1;
  if (p.index > p.resources.length + 1) bad(`index must be at most ${p.resources.length + 1} (the number of inputs)`);
  return p as AvconcatParams;
}

/** What ffprobe told of one input. */
export interface ConcatInput {
  path: string;
  /** Seconds. */
  duration: number;
  video?: { w: number; h: number; fps: number };
  audio: boolean;
}

/** Whether the output format holds video. */
export const concatHasVideo = (format: string): boolean => AVTHUMB_FORMATS[format]?.vcodec !== undefined;

/** The ffmpeg argv concatenating `inputs` in order into `output` (concat filter, re-encoded). */
export function avconcatArgs(p: AvconcatParams, inputs: ConcatInput[], output: string, threads: number): string[] {
  const spec = AVTHUMB_FORMATS[p.format];
  if (!spec) throw Errors.internal(`avconcat: no spec for ${p.format}`);
  const video = concatHasVideo(p.format);
  const firstVideo = inputs.find((i) => i.video)?.video;
  if (video && !firstVideo) bad('no input has a video stream (choose an audio format such as mp3)');
  if (video && inputs.some((i) => !i.video)) bad('every input needs a video stream for a video format');
  const size = p.size ?? (firstVideo ? { w: firstVideo.w + (firstVideo.w % 2), h: firstVideo.h + (firstVideo.h % 2) } : undefined);
  const fps = firstVideo && firstVideo.fps > 0 && firstVideo.fps <= 120 ? firstVideo.fps : 25;
  const audio = inputs.every((i) => i.audio) || (p.addAudio && inputs.some((i) => i.audio)) || !video;
  if (!video && !inputs.some((i) => i.audio)) bad('no input has an audio stream');
  const chains: string[] = [];
  const labels: string[] = [];
  inputs.forEach((inp, i) => {
    if (video && size) {
      chains.push(`[${i}:v:0]scale=${size.w}:${size.h}:force_original_aspect_ratio=decrease,pad=${size.w}:${size.h}:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=${fps},format=yuv420p[v${i}]`);
      labels.push(`[v${i}]`);
    }
    if (audio) {
      chains.push(
        inp.audio
          ? `[${i}:a:0]aresample=44100,aformat=sample_fmts=fltp:channel_layouts=stereo[a${i}]`
          : `anullsrc=r=44100:cl=stereo,atrim=duration=${inp.duration.toFixed(3)},aformat=sample_fmts=fltp:channel_layouts=stereo[a${i}]`,
      );
      labels.push(`[a${i}]`);
    }
  });
  const graph = `${chains.join(';')};${labels.join('')}concat=n=${inputs.length}:v=${video ? 1 : 0}:a=${audio ? 1 : 0}${video ? '[v]' : ''}${audio ? '[a]' : ''}`;
  const args: string[] = [...FFMPEG_PRELUDE, ...threadArgs(threads)];
  for (const inp of inputs) args.push(...inputGuard(), '-i', fileUrl(inp.path));
  args.push('-filter_complex', graph);
  if (video) args.push('-map', '[v]', '-c:v', spec.vcodec as string, '-pix_fmt', 'yuv420p', ...(spec.vcodec === 'libvpx' ? ['-b:v', '1000000'] : []));
  if (audio) args.push('-map', '[a]', '-c:a', spec.acodec as string);
  args.push(...spec.extra, '-threads', String(threads), '-f', spec.muxer, fileUrl(output));
  return args;
}
