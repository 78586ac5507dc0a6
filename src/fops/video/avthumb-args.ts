/**
 * `avthumb/<format>/…` (docs/development/kodo-protocol.md §10.6): the parameter parser and the pure parameters → ffmpeg argv builder.
 * No I/O here; avthumb.ts fetches the watermark image and runs ffmpeg.
 *
 * Formats (default codecs; the container decides the content type):
 *
 * | format | video / audio codecs | muxer, notes |
 * |---|---|---|
 * | mp4  | libx264 / aac       | mp4, `-movflags +faststart`, `-pix_fmt yuv420p` |
 * | flv  | libx264 / aac       | flv, `-pix_fmt yuv420p` |
 * | webm | libvpx (VP8) / libvorbis | webm, 1 Mbit/s video unless `vb` |
 * | gif  | gif / –             | gif (no audio) |
 * | mp3  | – / libmp3lame      | mp3 (audio only) |
 * | aac  | – / aac             | adts (audio only) |
 * | m4a  | – / aac             | ipod (audio only), `-movflags +faststart` |
 * | ogg  | – / libvorbis       | ogg (audio only) |
 * | wav  | – / pcm_s16le       | wav (audio only) |
 * | flac | – / flac            | flac (audio only) |
 * | m3u8, hls | libx264 / aac  | hls: the playlist, with MPEG-TS segments stored apart (hls-args.ts) |
 *
 * Parameters: `vb`, `ab` (bitrates `128k`, `1.25m`), `ar` (Hz), `r` (fps), `s/<W>x<H>` (`<W>x` or `x<H>` keeps
 * the aspect ratio; 2..4096 per side), `autoscale/1` (fit inside `s` and pad), `vcodec`, `acodec` (`libfdk_aac`
 * is taken as `aac`, which Debian ships), `ss`, `t` (seconds, ms precision), `an/1`, `vn/1`, `stripmeta/<0|1>`;
 * watermarks `wmImage/<b64 URL>`, `wmGravity/<G>` (default NorthEast), `wmText/<b64>`, `wmGravityText/<G>`
 * (default NorthEast), `wmFont/<b64 name>` (a DejaVu face; other names use DejaVu Sans), `wmFontColor/<b64 colour>`
 * (`#RRGGBB`, `#RRGGBBAA`, `0xRRGGBB` or a name; default black), `wmFontSize/<1..500>` (pixels, default 24).
 * Watermarks sit 10 px from the edges. An unknown format or parameter, a bad value, a video parameter on an
 * audio-only output (or the reverse) → 400 naming it.
 */
import { urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors } from '../../errors.js';
import { FFMPEG_PRELUDE, fileUrl, inputGuard, pairs, parseBitrate, parseIntIn, parseSeconds, secondsArg, threadArgs } from './common.js';

interface FormatSpec {
  muxer: string;
  contentType: string;
  ext: string;
  /** Default video codec; undefined for audio-only formats. */
  vcodec?: string;
  /** Default audio codec; undefined for formats without audio. */
  acodec?: string;
  extra: string[];
}

export const AVTHUMB_FORMATS: Record<string, FormatSpec> = {
  mp4: { muxer: 'mp4', contentType: 'video/mp4', ext: '.mp4', vcodec: 'libx264', acodec: 'aac', extra: ['-movflags', '+faststart'] },
  flv: { muxer: 'flv', contentType: 'video/x-flv', ext: '.flv', vcodec: 'libx264', acodec: 'aac', extra: [] },
  webm: { muxer: 'webm', contentType: 'video/webm', ext: '.webm', vcodec: 'libvpx', acodec: 'libvorbis', extra: [] },
  gif: { muxer: 'gif', contentType: 'image/gif', ext: '.gif', vcodec: 'gif', extra: [] },
  mp3: { muxer: 'mp3', contentType: 'audio/mpeg', ext: '.mp3', acodec: 'libmp3lame', extra: [] },
  aac: { muxer: 'adts', contentType: 'audio/aac', ext: '.aac', acodec: 'aac', extra: [] },
  m4a: { muxer: 'ipod', contentType: 'audio/mp4', ext: '.m4a', acodec: 'aac', extra: ['-movflags', '+faststart'] },
  ogg: { muxer: 'ogg', contentType: 'audio/ogg', ext: '.ogg', acodec: 'libvorbis', extra: [] },
  wav: { muxer: 'wav', contentType: 'audio/wav', ext: '.wav', acodec: 'pcm_s16le', extra: [] },
  flac: { muxer: 'flac', contentType: 'audio/flac', ext: '.flac', acodec: 'flac', extra: [] },
  // HLS (hls-args.ts): the playlist; its MPEG-TS segments are stored as objects of their own.
  m3u8: { muxer: 'hls', contentType: 'application/x-mpegurl', ext: '.m3u8', vcodec: 'libx264', acodec: 'aac', extra: [] },
  hls: { muxer: 'hls', contentType: 'application/x-mpegurl', ext: '.m3u8', vcodec: 'libx264', acodec: 'aac', extra: [] },
};

const VCODECS = ['libx264', 'libx265', 'libvpx', 'libvpx-vp9', 'mpeg4', 'gif', 'copy'];
const ACODECS = ['aac', 'libfdk_aac', 'libmp3lame', 'libvorbis', 'libopus', 'flac', 'pcm_s16le', 'copy'];
/** Video codecs that need yuv420p (and so even sizes) for players to accept them. */
const YUV420_CODECS = new Set(['libx264', 'libx265', 'libvpx', 'libvpx-vp9', 'mpeg4']);
export const GRAVITIES = ['NorthWest', 'North', 'NorthEast', 'West', 'Center', 'East', 'SouthWest', 'South', 'SouthEast'] as const;
export type Gravity = (typeof GRAVITIES)[number];
const MAX_SIDE = 4096;
const MARGIN = 10;

export interface AvthumbParams {
  format: string;
  vb?: number;
  ab?: number;
  ar?: number;
  r?: number;
  size?: { w?: number; h?: number };
  autoscale: boolean;
  vcodec?: string;
  acodec?: string;
  ssMs?: number;
  tMs?: number;
  an: boolean;
  vn: boolean;
  stripmeta: boolean;
  wmImage?: string;
  wmGravity: Gravity;
  wmText?: string;
  wmGravityText: Gravity;
  wmFont?: string;
  wmFontColor: string;
  wmFontSize: number;
}

const bad = (what: string): never => {
  throw Errors.badRequest(`avthumb: ${what}`);
};

function gravity(name: string, v: string): Gravity {
  if (!(GRAVITIES as readonly string[]).includes(v)) bad(`${name} must be one of ${GRAVITIES.join(', ')}, got ${JSON.stringify(v)}`);
  return v as Gravity;
}

function flag(name: string, v: string): boolean {
  if (v !== '0' && v !== '1') bad(`${name} must be 0 or 1, got ${JSON.stringify(v)}`);
  return v === '1';
}

function b64(name: string, v: string): string {
  let text: string;
  try {
    text = urlsafeB64DecodeText(v);
  } catch {
    return bad(`${name} must be URL-safe base64 of UTF-8 text`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(text)) bad(`${name} must not contain control characters`);
  if (text === '' || text.length > 1000) bad(`${name} must be 1..1000 characters`);
  return text;
}

function parseSize(v: string): { w?: number; h?: number } {
  const m = /^(\d*)x(\d*)$/.exec(v);
  if (!m || (m[1] === '' && m[2] === '')) return bad(`s must be <W>x<H>, <W>x or x<H>, got ${JSON.stringify(v)}`);
  const out: { w?: number; h?: number } = {};
  if (m[1]) out.w = parseIntIn('avthumb', 's width', m[1], 2, MAX_SIDE);
  if (m[2]) out.h = parseIntIn('avthumb', 's height', m[2], 2, MAX_SIDE);
  return out;
}

function parseColor(v: string): string {
  const c = b64('wmFontColor', v);
  if (!/^(#|0x)?[0-9a-fA-F]{6}([0-9a-fA-F]{2})?$/.test(c) && !/^[A-Za-z]{1,32}$/.test(c)) bad(`wmFontColor must be #RRGGBB, #RRGGBBAA or a colour name, got ${JSON.stringify(c)}`);
  return /^[0-9a-fA-F]{6}([0-9a-fA-F]{2})?$/.test(c) ? `0x${c}` : c.replace(/^#/, '0x');
}

export function parseAvthumb(args: string[]): AvthumbParams {
  const [format, ...rest] = args;
  if (format === undefined || !Object.hasOwn(AVTHUMB_FORMATS, format)) {
    return bad(`unsupported format ${JSON.stringify(format ?? '')} (supported: ${Object.keys(AVTHUMB_FORMATS).join(', ')})`);
  }
  const p: AvthumbParams = { format, autoscale: false, an: false, vn: false, stripmeta: false, wmGravity: 'NorthEast', wmGravityText: 'NorthEast', wmFontColor: 'black', wmFontSize: 24 };
  for (const [k, v] of pairs('avthumb', rest)) {
    switch (k) {
      case 'vb': p.vb = parseBitrate('avthumb', 'vb', v, 1000, 200_000_000); break;
      case 'ab': p.ab = parseBitrate('avthumb', 'ab', v, 1000, 2_000_000); break;
      case 'ar': p.ar = parseIntIn('avthumb', 'ar', v, 8000, 192_000); break;
      case 'r':
        if (!/^\d+(\.\d{1,3})?$/.test(v) || Number(v) <= 0 || Number(v) > 120) bad(`r must be a frame rate in (0, 120], got ${JSON.stringify(v)}`);
        p.r = Number(v);
        break;
      case 's': p.size = parseSize(v); break;
      case 'autoscale': p.autoscale = flag('autoscale', v); break;
      case 'vcodec':
        if (!VCODECS.includes(v)) bad(`unsupported vcodec ${JSON.stringify(v)} (supported: ${VCODECS.join(', ')})`);
        p.vcodec = v;
        break;
      case 'acodec':
        if (!ACODECS.includes(v)) bad(`unsupported acodec ${JSON.stringify(v)} (supported: ${ACODECS.join(', ')})`);
        p.acodec = v === 'libfdk_aac' ? 'aac' : v;
        break;
      case 'ss': p.ssMs = parseSeconds('avthumb', 'ss', v); break;
      case 't': p.tMs = parseSeconds('avthumb', 't', v, true); break;
      case 'an': p.an = flag('an', v); break;
      case 'vn': p.vn = flag('vn', v); break;
      case 'stripmeta': p.stripmeta = flag('stripmeta', v); break;
      case 'wmImage': {
        const url = b64('wmImage', v);
        if (!/^https?:\/\//i.test(url)) bad(`wmImage must be the URL-safe base64 of an http(s) URL, got ${JSON.stringify(url)}`);
        p.wmImage = url;
        break;
      }
      case 'wmGravity': p.wmGravity = gravity('wmGravity', v); break;
      case 'wmText': p.wmText = b64('wmText', v); break;
      case 'wmGravityText': p.wmGravityText = gravity('wmGravityText', v); break;
      case 'wmFont': p.wmFont = b64('wmFont', v); break;
      case 'wmFontColor': p.wmFontColor = parseColor(v); break;
      case 'wmFontSize': p.wmFontSize = parseIntIn('avthumb', 'wmFontSize', v, 1, 500); break;
      default: bad(`unknown parameter ${JSON.stringify(k)}`);
    }
  }
  checkCombination(p);
  return p;
}

/** Rejects parameters that cannot apply to the chosen output (400 naming them). */
function checkCombination(p: AvthumbParams): void {
  const spec = AVTHUMB_FORMATS[p.format] as FormatSpec;
  const video = hasVideo(p);
  const audio = hasAudio(p);
  if (!video && !audio) bad('an/1 and vn/1 together leave nothing to encode');
  const videoParams = (['vb', 'r', 'size', 'vcodec', 'wmImage', 'wmText'] as const).filter((k) => p[k] !== undefined);
  if (!video && videoParams.length > 0) {
    bad(`${videoParams.map((k) => (k === 'size' ? 's' : k)).join(', ')}: the output has no video (${spec.vcodec ? 'vn/1' : `format ${p.format} is audio-only`})`);
  }
  const audioParams = (['ab', 'ar', 'acodec'] as const).filter((k) => p[k] !== undefined);
  if (!audio && audioParams.length > 0) bad(`${audioParams.join(', ')}: the output has no audio (${spec.acodec ? 'an/1' : `format ${p.format} has no audio`})`);
  if (p.autoscale && !(p.size?.w && p.size.h)) bad('autoscale/1 needs s/<W>x<H>');
  const filtered = p.size !== undefined || p.wmImage !== undefined || p.wmText !== undefined;
  if (p.vcodec === 'copy' && filtered) bad('vcodec copy cannot be combined with s or watermarks');
  const vcodec = p.vcodec ?? spec.vcodec;
  if (vcodec && YUV420_CODECS.has(vcodec) && p.size && ((p.size.w ?? 0) % 2 === 1 || (p.size.h ?? 0) % 2 === 1)) {
    bad(`s: ${vcodec} needs an even width and height`);
  }
}

const hasVideo = (p: AvthumbParams): boolean => AVTHUMB_FORMATS[p.format]?.vcodec !== undefined && !p.vn;
const hasAudio = (p: AvthumbParams): boolean => AVTHUMB_FORMATS[p.format]?.acodec !== undefined && !p.an;

/** The content type and file extension of avthumb's output. */
export function avthumbOutput(p: AvthumbParams): { contentType: string; ext: string } {
  const spec = AVTHUMB_FORMATS[p.format] as FormatSpec;
  return { contentType: spec.contentType, ext: spec.ext };
}

/**
 * Escapes a value for a filter option inside a filtergraph (ffmpeg-filters "Notes on filtergraph escaping"):
 * level 1 quotes it for the option parser (`'` as `'\''`), level 2 backslash-escapes `\ ' [ ] , ;` for the
 * graph parser. No shell is involved (argv), so there is no third level. Combined with `expansion=none`,
 * drawtext shows user text literally and it cannot add options or filters.
 */
export function escapeFilterValue(v: string): string {
  const level1 = `'${v.split("'").join("'\\''")}'`;
  return level1.replace(/[\\'[\],;]/g, (c) => `\\${c}`);
}

/** overlay x:y for a gravity (W/H the video, w/h the watermark). */
export function overlayPosition(g: Gravity, vw = 'W', vh = 'H', ow = 'w', oh = 'h'): string {
  const x = g.endsWith('West') ? `${MARGIN}` : g.endsWith('East') ? `${vw}-${ow}-${MARGIN}` : `(${vw}-${ow})/2`;
  const y = g.startsWith('North') ? `${MARGIN}` : g.startsWith('South') ? `${vh}-${oh}-${MARGIN}` : `(${vh}-${oh})/2`;
  return `x=${x}:y=${y}`;
}

/** Local files avthumb's argv refers to. */
export interface AvthumbFiles {
  input: string;
  output: string;
  /** The watermark image (a PNG written by the run), when `wmImage` is given. */
  wmImage?: string;
  /** The TrueType font of `wmText`. */
  font: string;
}

/** The video filter chain of `[0:v:0]` (scale, image overlay, text), or undefined when none is needed. */
export function avthumbFilterGraph(p: AvthumbParams, files: Pick<AvthumbFiles, 'wmImage' | 'font'>): string | undefined {
  const chain: string[] = [];
  if (p.size) {
    const { w, h } = p.size;
    if (p.autoscale && w && h) chain.push(`scale=${w}:${h}:force_original_aspect_ratio=decrease`, `pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2`);
    else chain.push(`scale=${w ?? -2}:${h ?? -2}`);
  }
  const text =
    p.wmText === undefined
      ? undefined
      : `drawtext=fontfile=${escapeFilterValue(files.font)}:text=${escapeFilterValue(p.wmText)}:expansion=none` +
        `:fontcolor=${p.wmFontColor}:fontsize=${p.wmFontSize}:${overlayPosition(p.wmGravityText, 'w', 'h', 'tw', 'th')}`;
  if (p.wmImage !== undefined) {
    const base = chain.length > 0 ? `[0:v:0]${chain.join(',')}[base];` : '';
    const baseLabel = chain.length > 0 ? '[base]' : '[0:v:0]';
    return `${base}${baseLabel}[1:v:0]overlay=${overlayPosition(p.wmGravity)}${text ? `,${text}` : ''}[vout]`;
  }
  if (text) chain.push(text);
  return chain.length > 0 ? chain.join(',') : undefined;
}

/** The ffmpeg argv of avthumb with `p`, `files` and `threads` (`-threads` for decoding and encoding). */
export function avthumbArgs(p: AvthumbParams, files: AvthumbFiles, threads: number): string[] {
  const spec = AVTHUMB_FORMATS[p.format] as FormatSpec;
  const video = hasVideo(p);
  const audio = hasAudio(p);
  const graph = video ? avthumbFilterGraph(p, files) : undefined;
  const args: string[] = [...FFMPEG_PRELUDE, ...threadArgs(threads), ...inputGuard()];
  if (p.ssMs !== undefined) args.push('-ss', secondsArg(p.ssMs));
  args.push('-i', fileUrl(files.input));
  if (video && p.wmImage !== undefined) {
    if (!files.wmImage) throw Errors.internal('avthumb: the watermark image was not prepared');
    args.push('-protocol_whitelist', 'file', '-f', 'png_pipe', '-i', fileUrl(files.wmImage));
  }
  if (video) {
    if (graph && p.wmImage !== undefined) args.push('-filter_complex', graph, '-map', '[vout]');
    else {
      args.push('-map', graph ? '0:v:0' : '0:v:0?');
      if (graph) args.push('-vf', graph);
    }
    const vcodec = p.vcodec ?? (spec.vcodec as string);
    args.push('-c:v', vcodec);
    if (YUV420_CODECS.has(vcodec)) args.push('-pix_fmt', 'yuv420p');
    if (p.vb !== undefined) args.push('-b:v', String(p.vb));
    else if (vcodec === 'libvpx' || vcodec === 'libvpx-vp9') args.push('-b:v', '1000000');
    if (p.r !== undefined) args.push('-r', String(p.r));
  } else args.push('-vn');
  if (audio) {
    args.push('-map', '0:a:0?', '-c:a', p.acodec ?? (spec.acodec as string));
    if (p.ab !== undefined) args.push('-b:a', String(p.ab));
    if (p.ar !== undefined) args.push('-ar', String(p.ar));
  } else args.push('-an');
  args.push('-sn', '-dn');
  if (p.stripmeta) args.push('-map_metadata', '-1');
  if (p.tMs !== undefined) args.push('-t', secondsArg(p.tMs));
  args.push(...spec.extra, '-threads', String(threads), '-f', spec.muxer, fileUrl(files.output));
  return args;
}
