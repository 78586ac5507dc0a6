/**
 * `avthumb/m3u8/…` and its alias `avthumb/hls/…` (docs/development/kodo-protocol.md §10.6): HLS packaging. The
 * parameter parser and the ffmpeg argv; hls.ts runs it and stores the segments.
 *
 * Every avthumb parameter (avthumb-args.ts) plus:
 * - `segtime/<2..120>` seconds per segment (default 10), `segFirstTime/<1..120>` seconds of the first one;
 * - `noDomain/<0|1>` (1: segments named relative to the playlist), `domain/<b64>` (the scheme and host segment
 *   URLs use instead of the bucket's; not with `noDomain/1`);
 * - `hlsKey/<b64 of 16 bytes>` AES-128 key, `hlsKeyType/0` (the only type: the key as given), `hlsKeyUrl/<b64>`
 *   (the key's URI in the playlist, required with a key), `hlsIV/<b64 of 16 bytes>` (default: the segment number);
 * - `savePattern/<b64>` (or `pattern`): segment keys, with `$(count)` (key-pattern.ts); default
 *   `<playlist key without .m3u8>/$(count).ts`.
 * Errors: 400 `avthumb: …` naming the parameter.
 */
import { urlsafeB64Decode, urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors } from '../../errors.js';
import { avthumbArgs, parseAvthumb, type AvthumbFiles, type AvthumbParams } from './avthumb-args.js';
import { parseKeyPattern } from './key-pattern.js';
import { parseSeconds } from './common.js';

/** Most segments one playlist may have (a 2 s segment time covers more than 5 hours). */
export const MAX_SEGMENTS = 10_000;

export interface HlsParams {
  kind: 'hls';
  /** The avthumb parameters (format `m3u8` or `hls`). */
  av: AvthumbParams;
  segMs: number;
  segFirstMs?: number;
  noDomain: boolean;
  /** `scheme://host[:port]` (no trailing slash) for segment URLs. */
  domain?: string;
  /** AES-128 key, 16 bytes. */
  key?: Buffer;
  keyUrl?: string;
  /** IV as 32 hex digits. */
  iv?: string;
  pattern?: string;
}

const HLS_KEYS = new Set(['segtime', 'segFirstTime', 'noDomain', 'domain', 'hlsKey', 'hlsKeyType', 'hlsKeyUrl', 'hlsIV', 'pattern', 'savePattern']);

const bad = (what: string): never => {
  throw Errors.badRequest(`avthumb: ${what}`);
};

function sixteenBytes(name: string, v: string): Buffer {
  let b: Buffer;
  try {
    b = urlsafeB64Decode(v);
  } catch {
    return bad(`${name} must be URL-safe base64 of 16 bytes`);
  }
  if (b.length !== 16) bad(`${name} must be 16 bytes (AES-128), got ${b.length}`);
  return b;
}

function text(name: string, v: string): string {
  let t: string;
  try {
    t = urlsafeB64DecodeText(v);
  } catch {
    return bad(`${name} must be URL-safe base64 of UTF-8 text`);
  }
  // eslint-disable-next-line no-control-regex
  if (t === '' || t.length > 1000 || /[\u0000-\u001f\u007f"]/.test(t)) bad(`${name} must be 1..1000 characters, without control characters or quotes`);
  return t;
}

/** Parses `m3u8|hls/…` (see the module comment). */
export function parseHls(args: string[]): HlsParams {
  const [format = '', ...rest] = args;
  const avArgs: string[] = [format];
  const hls: Record<string, string> = {};
  if (rest.length % 2 !== 0) bad(`parameter ${rest[rest.length - 1]} has no value`);
  for (let i = 0; i < rest.length; i += 2) {
    const k = rest[i] as string;
    const v = rest[i + 1] as string;
    if (!HLS_KEYS.has(k)) avArgs.push(k, v);
    else if (Object.hasOwn(hls, k)) bad(`parameter ${k} given twice`);
    else hls[k] = v;
  }
  const av = parseAvthumb(avArgs);
  const p: HlsParams = { kind: 'hls', av, segMs: 10_000, noDomain: false };
  for (const [k, v] of Object.entries(hls)) {
    switch (k) {
      case 'segtime':
        p.segMs = parseSeconds('avthumb', 'segtime', v, true);
        if (p.segMs < 2000 || p.segMs > 120_000) bad(`segtime must be between 2 and 120 seconds, got ${v}`);
        break;
      case 'segFirstTime':
        p.segFirstMs = parseSeconds('avthumb', 'segFirstTime', v, true);
        if (p.segFirstMs < 1000 || p.segFirstMs > 120_000) bad(`segFirstTime must be between 1 and 120 seconds, got ${v}`);
        break;
      case 'noDomain':
        if (v !== '0' && v !== '1') bad(`noDomain must be 0 or 1, got ${JSON.stringify(v)}`);
        p.noDomain = v === '1';
        break;
      case 'domain': {
        const d = text('domain', v).replace(/\/+$/, '');
        const withScheme = /^https?:\/\//i.test(d) ? d : `http://${d}`;
        if (!/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(withScheme)) bad(`domain must be a host name (optionally with scheme and port), got ${JSON.stringify(d)}`);
        p.domain = withScheme;
        break;
      }
      case 'hlsKey': p.key = sixteenBytes('hlsKey', v); break;
      case 'hlsKeyType':
        if (v !== '0') bad(`hlsKeyType ${JSON.stringify(v)} is not supported: only 0 (hlsKey is the key itself, URL-safe base64); RSA-encrypted keys (1.x) are not`);
        break;
      case 'hlsKeyUrl': p.keyUrl = text('hlsKeyUrl', v); break;
      case 'hlsIV': p.iv = sixteenBytes('hlsIV', v).toString('hex'); break;
      default: p.pattern = parseKeyPattern('avthumb', k, v);
    }
  }
  if (p.noDomain && p.domain !== undefined) bad('domain cannot be combined with noDomain/1');
  if (p.key === undefined && (p.keyUrl !== undefined || p.iv !== undefined)) bad('hlsKeyUrl and hlsIV need hlsKey');
  if (p.key !== undefined && p.keyUrl === undefined) bad('hlsKey needs hlsKeyUrl (the key URI written in the playlist)');
  if (p.av.vcodec === 'gif' || p.av.acodec === 'flac' || p.av.acodec === 'pcm_s16le') bad('HLS segments (MPEG-TS) cannot hold that codec');
  return p;
}

/** Local files of an HLS run. */
export interface HlsFiles extends AvthumbFiles {
  /** `%06d.ts` in the run's segment directory. */
  segmentTemplate: string;
  /** ffmpeg's key info file (URI, key file, IV), when encrypting. */
  keyInfo?: string;
}

/** The ffmpeg argv: avthumb's, with the hls muxer's options before the output (the playlist). */
export function hlsArgs(p: HlsParams, files: HlsFiles, threads: number): string[] {
  const args = avthumbArgs(p.av, files, threads);
  const output = args.pop() as string;
  const segSeconds = (p.segMs / 1000).toString();
  if (!p.av.vn && p.av.vcodec !== 'copy') args.push('-force_key_frames', `expr:gte(t,n_forced*${segSeconds})`);
  args.push('-hls_time', segSeconds, '-hls_list_size', '0', '-hls_playlist_type', 'vod', '-hls_segment_type', 'mpegts');
  if (p.segFirstMs !== undefined) args.push('-hls_init_time', (p.segFirstMs / 1000).toString());
  if (files.keyInfo !== undefined) args.push('-hls_key_info_file', files.keyInfo);
  args.push('-hls_segment_filename', files.segmentTemplate, output);
  return args;
}

/** The text of ffmpeg's key info file: key URI, key file, IV (optional). */
export function keyInfoText(p: HlsParams, keyFile: string): string {
  return `${p.keyUrl ?? ''}\n${keyFile}\n${p.iv ?? ''}\n`;
}
