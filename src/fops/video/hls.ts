/**
 * HLS packaging, `avthumb/m3u8/…` or `avthumb/hls/…` (docs/development/kodo-protocol.md §10.6), persistent only.
 *
 * ffmpeg's hls muxer writes the playlist and MPEG-TS segments into a directory of the run's temp dir (bounded by
 * GRANARY_VIDEO_MAX_SOURCE on the input and GRANARY_JOB_TIMEOUT on the time; nothing is held in memory but the
 * playlist). Each segment is then stored as an object of the output's bucket through `ctx.outputs` (putObject),
 * in order, and the playlist — the command's output, stored by the job at the saveas key — names them by their
 * absolute download URL (the bucket's bound domain, else GRANARY_PUBLIC_URL path style; `domain/…` replaces the
 * scheme and host) or, with `noDomain/1`, relative to the playlist's own key. With `hlsKey` the segments are
 * AES-128 encrypted and the playlist carries `#EXT-X-KEY:METHOD=AES-128,URI="<hlsKeyUrl>"[,IV=0x…]`.
 *
 * Errors: 400 bad parameters (at parse), a source ffmpeg cannot read, more than MAX_SEGMENTS segments, or a run
 * without side outputs (executeFops outside a job); putObject's errors for the segments.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import { Errors } from '../../errors.js';
import { keyPath } from '../key-path.js';
import type { FopContext, FopResult, FopSource, SideOutputs } from '../types.js';
import { hlsArgs, keyInfoText, MAX_SEGMENTS, type HlsParams } from './hls-args.js';
import { patternKey } from './key-pattern.js';
import { runTool } from './spawn.js';

/** The default segment key pattern: `<playlist key without .m3u8>/$(count).ts`. */
export function defaultSegmentPattern(playlistKey: string): string {
  return `${playlistKey.replace(/\.m3u8$/i, '')}/$(count).ts`;
}

/** The URL of segment `segKey` as the playlist at `playlistKey` names it (see the module comment). */
async function segmentUrl(p: HlsParams, out: SideOutputs, ctx: FopContext, segKey: string): Promise<string> {
  if (p.noDomain) {
    const rel = posix.relative(posix.dirname(`/${out.key}`), `/${segKey}`);
    return rel.split('/').map((s) => (s === '..' ? s : encodeURIComponent(s))).join('/');
  }
  if (p.domain !== undefined) return `${p.domain}/${keyPath(segKey)}`;
  if (!ctx.urls) throw Errors.internal('avthumb: no download URLs in this context');
  return ctx.urls.urlOf(out.bucket, segKey);
}

/** Runs the HLS packaging of `source` (see the module comment); the result is the playlist. */
export async function runHls(
  source: FopSource,
  p: HlsParams,
  ctx: FopContext,
  prepareWatermark: (url: string) => Promise<string>,
  font: string,
): Promise<FopResult> {
  const out = ctx.outputs;
  if (!out) throw Errors.badRequest('avthumb: m3u8 runs only as a persistent command (pfop or persistentOps): its segments are stored as objects');
  const input = await source.file();
  const wmImage = p.av.wmImage !== undefined ? await prepareWatermark(p.av.wmImage) : undefined;
  const dir = ctx.tempFile('-hls');
  await mkdir(dir);
  const playlist = join(dir, 'index.m3u8');
  let keyInfo: string | undefined;
  if (p.key) {
    const keyFile = join(dir, 'key.bin');
    await writeFile(keyFile, p.key, { mode: 0o600 });
    keyInfo = join(dir, 'key.info');
    await writeFile(keyInfo, keyInfoText(p, keyFile), { mode: 0o600 });
  }
  const files = { input, output: playlist, font, segmentTemplate: join(dir, '%06d.ts'), ...(wmImage ? { wmImage } : {}), ...(keyInfo ? { keyInfo } : {}) };
  const redact: Record<string, string> = { [input]: 'input', [dir]: 'output', ...(wmImage ? { [wmImage]: 'watermark' } : {}) };
  try {
    await runTool('avthumb', 'ffmpeg', hlsArgs(p, files, ctx.limits.videoThreads), ctx, { redact });
  } catch (err) {
    if (err instanceof Error && /matches no streams/.test(err.message)) throw Errors.videoFailed('avthumb: the source has no video stream (add vn/1 for audio only)');
    throw err;
  }
  const text = await readFile(playlist, 'utf8').catch(() => '');
  const lines = text.split(/\r?\n/);
  const segments = lines.filter((l) => l !== '' && !l.startsWith('#'));
  if (segments.length === 0) throw Errors.videoFailed('avthumb: nothing was encoded (ss past the end of the source?)');
  if (segments.length > MAX_SEGMENTS) throw Errors.videoFailed(`avthumb: ${segments.length} segments, at most ${MAX_SEGMENTS} (raise segtime)`);
  const pattern = p.pattern ?? defaultSegmentPattern(out.key);
  const rewritten: string[] = [];
  for (const line of lines) {
    if (line === '' || line.startsWith('#')) {
      rewritten.push(line);
      continue;
    }
    const name = basename(line);
    const m = /^(\d{6})\.ts$/.exec(name);
    if (!m) throw Errors.internal(`avthumb: unexpected segment name in ffmpeg's playlist: ${JSON.stringify(name)}`);
    if (ctx.signal.aborted) throw Errors.videoFailed('avthumb: processing timed out');
    const segKey = patternKey(pattern, Number(m[1]));
    await out.store(segKey, join(dir, name), 'video/mp2t');
    rewritten.push(await segmentUrl(p, out, ctx, segKey));
  }
  return { body: Buffer.from(rewritten.join('\n')), contentType: 'application/x-mpegurl' };
}
