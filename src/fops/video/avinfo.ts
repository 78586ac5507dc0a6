/**
 * `avinfo` (docs/development/kodo-protocol.md §10.4): ffprobe's `-show_format -show_streams -of json`, reshaped to Kodo's fields.
 *
 * streams[]: index, codec_name, codec_long_name, codec_type, codec_time_base, codec_tag_string, codec_tag,
 * profile, width, height, pix_fmt, level, sample_aspect_ratio, display_aspect_ratio, r_frame_rate, avg_frame_rate,
 * time_base, start_time, duration, bit_rate, nb_frames, sample_fmt, sample_rate, channels, channel_layout,
 * disposition, tags.
 * format: filename, nb_streams, format_name, format_long_name, start_time, duration, size, bit_rate, tags.
 *
 * Numbers such as durations, bitrates, sizes, sample rates and frame counts are strings (as ffprobe prints them);
 * index, counts and dimensions are integers; fields ffprobe does not know are left out. `codec_time_base` (no
 * longer printed by ffprobe 5) is `1/<sample_rate>` for audio and the inverse of `r_frame_rate` for video.
 * `format.filename` is the neutral `input`: the stored blob's path never leaks.
 */
import { Errors } from '../../errors.js';
import type { FopCommand, FopContext, FopSource } from '../types.js';
import { checkVideoSource, fileUrl, inputGuard } from './common.js';
import { runTool } from './spawn.js';

type Json = Record<string, unknown>;

const STREAM_STRINGS = [
  'codec_name', 'codec_long_name', 'profile', 'codec_type', 'codec_time_base', 'codec_tag_string', 'codec_tag',
  'pix_fmt', 'sample_aspect_ratio', 'display_aspect_ratio', 'r_frame_rate', 'avg_frame_rate', 'time_base',
  'start_time', 'duration', 'bit_rate', 'nb_frames', 'sample_fmt', 'sample_rate', 'channel_layout',
] as const;
const STREAM_INTS = ['index', 'width', 'height', 'level', 'channels'] as const;
const FORMAT_STRINGS = ['format_name', 'format_long_name', 'start_time', 'duration', 'size', 'bit_rate'] as const;

/** Copies `fields` of `from` that are present, as strings or integers. */
function copy(to: Json, from: Json, fields: readonly string[], as: 'string' | 'int'): void {
  for (const f of fields) {
    const v = from[f];
    if (v === undefined || v === null || v === '') continue;
    if (as === 'string') to[f] = String(v);
    else if (Number.isFinite(Number(v))) to[f] = Math.trunc(Number(v));
  }
}

/** Tags as a string → string object (always present, possibly empty). */
function tagsOf(v: unknown): Record<string, string> {
  const tags: Record<string, string> = {};
  if (v && typeof v === 'object') {
    for (const [k, val] of Object.entries(v as Json)) if (typeof val === 'string' || typeof val === 'number') tags[k] = String(val);
  }
  return tags;
}

/** The inverse of a rational `a/b` as `b/a`, if it is a positive rational. */
function inverse(rate: unknown): string | undefined {
  const m = typeof rate === 'string' ? /^(\d+)\/(\d+)$/.exec(rate) : null;
  if (!m || Number(m[1]) === 0 || Number(m[2]) === 0) return undefined;
  return `${m[2]}/${m[1]}`;
}

/** ffprobe's JSON (`-show_format -show_streams`) → Kodo's avinfo document. */
export function reshapeProbe(probe: Json): { streams: Json[]; format: Json } {
  const streams = (Array.isArray(probe.streams) ? (probe.streams as Json[]) : []).map((s) => {
    const out: Json = {};
    const src: Json = { ...s };
    if (src.codec_time_base === undefined) {
      const tb = src.codec_type === 'audio' && src.sample_rate ? `1/${String(src.sample_rate)}` : src.codec_type === 'video' ? inverse(src.r_frame_rate) : undefined;
      if (tb) src.codec_time_base = tb;
    }
    copy(out, src, STREAM_INTS, 'int');
    copy(out, src, STREAM_STRINGS, 'string');
    if (src.disposition && typeof src.disposition === 'object') out.disposition = src.disposition;
    out.tags = tagsOf(src.tags);
    return out;
  });
  const f = (probe.format && typeof probe.format === 'object' ? probe.format : {}) as Json;
  const format: Json = { filename: 'input', nb_streams: Number.isFinite(Number(f.nb_streams)) ? Math.trunc(Number(f.nb_streams)) : streams.length };
  copy(format, f, FORMAT_STRINGS, 'string');
  format.tags = tagsOf(f.tags);
  return { streams, format };
}

/** Runs ffprobe on `source` and returns its raw JSON (400 when the source is not a media file). */
export async function probe(cmd: string, source: FopSource, ctx: FopContext): Promise<Json> {
  checkVideoSource(cmd, source, ctx.limits);
  const path = await source.file();
  const out = await runTool(
    cmd,
    'ffprobe',
    ['-hide_banner', '-v', 'error', ...inputGuard(), '-show_format', '-show_streams', '-of', 'json', fileUrl(path)],
    ctx,
    { redact: { [path]: 'input' } },
  );
  let json: unknown;
  try {
    json = JSON.parse(out.toString('utf8'));
  } catch {
    throw Errors.internal(`${cmd}: ffprobe wrote malformed JSON`);
  }
  if (!json || typeof json !== 'object') throw Errors.internal(`${cmd}: ffprobe wrote malformed JSON`);
  return json as Json;
}

export const avinfo: FopCommand<Record<string, never>> = {
  name: 'avinfo',
  pool: 'video',
  parse(args) {
    if (args.length > 0) throw Errors.badRequest('avinfo: takes no parameters');
    return {};
  },
  async run(source, _params, ctx) {
    const info = reshapeProbe(await probe('avinfo', source, ctx));
    if (info.streams.length === 0) throw Errors.videoFailed('avinfo: the source has no audio or video stream');
    return { json: info };
  },
};
