/**
 * What the audio/video commands share: the input guard of every ffmpeg/ffprobe call, the source size check,
 * and parameter parsers (seconds with millisecond precision, bitrates).
 */
import { Errors } from '../../errors.js';
import type { FopLimits, FopSource } from '../types.js';

/**
 * Demuxers ffmpeg/ffprobe may use on a stored object. Playlist and reference formats (hls, dash, concat,
 * image2 patterns, sdp/rtp, tee…) are left out: a crafted upload must not make ffmpeg read other local files
 * or reach the network. `mov` covers mp4/m4a/3gp/mj2.
 */
export const INPUT_DEMUXERS = [
  'mov', 'matroska', 'webm', 'avi', 'flv', 'live_flv', 'mpegts', 'mpeg', 'mpegvideo', 'ogg', 'mp3', 'aac', 'wav', 'w64',
  'flac', 'gif', 'asf', 'amr', 'h264', 'hevc', 'm4v', 'caf', 'aiff', 'ape', 'wv', 'dv', 'mxf', 'nut', 'ivf', 'apng',
  'jpeg_pipe', 'png_pipe', 'webp_pipe', 'bmp_pipe', 'tiff_pipe', 'gif_pipe',
].join(',');

/** Options placed before `-i <stored object>`: local files only, known demuxers only. */
export function inputGuard(): string[] {
  return ['-protocol_whitelist', 'file', '-format_whitelist', INPUT_DEMUXERS];
}

/** Common leading options of every ffmpeg call: quiet, no stdin interaction. */
export const FFMPEG_PRELUDE = ['-hide_banner', '-nostdin', '-v', 'error'] as const;

/**
 * Global thread bounds of one ffmpeg run (GRANARY_VIDEO_THREADS): filter threads for simple and complex graphs.
 * `-threads` is also given before the input (decoder) and the output (encoder) by each argv builder.
 */
export function threadArgs(threads: number): string[] {
  const n = String(threads);
  return ['-filter_threads', n, '-filter_complex_threads', n, '-threads', n];
}

/** A local path as an ffmpeg URL (so a `:` in the path can never select a protocol). */
export const fileUrl = (path: string): string => `file:${path}`;

/** 400 when the source is larger than GRANARY_VIDEO_MAX_SOURCE. */
export function checkVideoSource(cmd: string, source: FopSource, limits: FopLimits): void {
  if (source.size > limits.maxVideoSourceBytes) {
    throw Errors.videoTooLarge(`${cmd}: source is ${source.size} bytes, the limit is ${limits.maxVideoSourceBytes} (GRANARY_VIDEO_MAX_SOURCE)`);
  }
}

/** Largest time parameter, seconds (ten days). */
const MAX_SECONDS = 864_000;

/**
 * Seconds with millisecond precision (`5`, `1.5`, `0.125`) → milliseconds; 400 `<cmd>: <name> …` for a negative,
 * non-numeric or absurdly large value, or with `positive`, for 0.
 */
export function parseSeconds(cmd: string, name: string, v: string, positive = false): number {
  if (!/^\d+(\.\d+)?$/.test(v)) throw Errors.badRequest(`${cmd}: ${name} must be a number of seconds (e.g. 5 or 1.25), got ${JSON.stringify(v)}`);
  const ms = Math.round(Number(v) * 1000);
  if (ms > MAX_SECONDS * 1000) throw Errors.badRequest(`${cmd}: ${name} must be at most ${MAX_SECONDS} s, got ${v}`);
  if (positive && ms <= 0) throw Errors.badRequest(`${cmd}: ${name} must be greater than 0, got ${v}`);
  return ms;
}

/** Milliseconds as an ffmpeg time (`5.000`). */
export const secondsArg = (ms: number): string => (ms / 1000).toFixed(3);

/**
 * A bitrate (`128k`, `1.25m`, `800000`; k = 1000, m = 1 000 000) → bits per second within `min..max`;
 * otherwise 400 `<cmd>: <name> …`.
 */
export function parseBitrate(cmd: string, name: string, v: string, min: number, max: number): number {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(v);
  if (!m) throw Errors.badRequest(`${cmd}: ${name} must be a bitrate such as 128k or 1.25m, got ${JSON.stringify(v)}`);
  const unit = (m[2] ?? '').toLowerCase();
  const bps = Math.round(Number(m[1]) * (unit === 'k' ? 1000 : unit === 'm' ? 1_000_000 : 1));
  if (bps < min || bps > max) throw Errors.badRequest(`${cmd}: ${name} must be between ${min} and ${max} bit/s, got ${v}`);
  return bps;
}

/** An integer in `min..max`, else 400 `<cmd>: <name> …`. */
export function parseIntIn(cmd: string, name: string, v: string, min: number, max: number): number {
  if (!/^\d+$/.test(v)) throw Errors.badRequest(`${cmd}: ${name} must be an integer, got ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < min || n > max) throw Errors.badRequest(`${cmd}: ${name} must be between ${min} and ${max}, got ${v}`);
  return n;
}

/** `k/v/k/v…` → pairs; 400 for a key without a value or a key given twice. */
export function pairs(cmd: string, args: string[]): [string, string][] {
  if (args.length % 2 !== 0) throw Errors.badRequest(`${cmd}: parameter ${args[args.length - 1]} has no value`);
  const out: [string, string][] = [];
  const seen = new Set<string>();
  for (let i = 0; i < args.length; i += 2) {
    const k = args[i] as string;
    if (seen.has(k)) throw Errors.badRequest(`${cmd}: parameter ${k} given twice`);
    seen.add(k);
    out.push([k, args[i + 1] as string]);
  }
  return out;
}
