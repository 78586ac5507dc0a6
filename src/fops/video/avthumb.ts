/**
 * `avthumb/<format>/…` (docs/development/kodo-protocol.md §10.6): transcoding with ffmpeg, persistent-only (pfop / persistentOps; the
 * registry refuses it on download URLs). Parameters and argv: avthumb-args.ts.
 *
 * `wmImage` is fetched with `ctx.fetchResource` (same-bucket URLs from storage, others through the outbound
 * guard; at most 10 MiB), checked and converted to PNG by sharp (bomb limits from the header), written to a temp
 * file and overlaid. `wmText` is drawn with a DejaVu face from the `dejavu-fonts-ttf` package that ships with
 * Granary. The output is a temp file of the run. Formats `m3u8` and `hls` package HLS instead (hls.ts).
 */
import { readdirSync } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Errors } from '../../errors.js';
import { openImage, readHeader, vips } from '../image-source.js';
import type { FopCommand, FopContext } from '../types.js';
import { avthumbArgs, avthumbOutput, parseAvthumb, type AvthumbParams } from './avthumb-args.js';
import { checkVideoSource } from './common.js';
import { parseHls, type HlsParams } from './hls-args.js';
import { runHls } from './hls.js';
import { runTool } from './spawn.js';

/** Largest watermark image fetched, bytes. */
const MAX_WATERMARK_BYTES = 10 * 1024 * 1024;

let fonts: Map<string, string> | undefined;

const normalise = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * The TrueType file for `wmFont`: a DejaVu face matched by name ignoring case, spaces and dashes
 * (`DejaVu Sans Mono`, `DejaVuSerif-Bold`…); any other name, or none, is DejaVu Sans.
 */
export function fontFile(name: string | undefined): string {
  if (!fonts) {
    const dir = join(dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf');
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.ttf'));
    } catch {
      throw Errors.internal('avthumb: the DejaVu fonts (npm package dejavu-fonts-ttf) are missing');
    }
    fonts = new Map(files.map((f) => [normalise(f.slice(0, -4)), join(dir, f)]));
  }
  const face = (name !== undefined && fonts.get(normalise(name))) || fonts.get('dejavusans');
  if (!face) throw Errors.internal('avthumb: DejaVuSans.ttf is missing from the dejavu-fonts-ttf package');
  return face;
}

/** Fetches, checks and converts the watermark image to a PNG temp file. */
async function prepareWatermark(url: string, ctx: FopContext): Promise<string> {
  const bytes = await ctx.fetchResource(url, MAX_WATERMARK_BYTES);
  const meta = await readHeader('avthumb: wmImage', bytes, ctx.limits);
  const png = await vips('avthumb: wmImage', () => openImage('avthumb: wmImage', bytes, meta, ctx.limits).rotate().png().toBuffer());
  const path = ctx.tempFile('.png');
  await writeFile(path, png);
  return path;
}

export const avthumb: FopCommand<AvthumbParams | HlsParams> = {
  name: 'avthumb',
  pool: 'video',
  persistentOnly: true,
  parse: (args) => (args[0] === 'm3u8' || args[0] === 'hls' ? parseHls(args) : parseAvthumb(args)),
  async run(source, params, ctx) {
    checkVideoSource('avthumb', source, ctx.limits);
    if ('kind' in params) return runHls(source, params, ctx, (url) => prepareWatermark(url, ctx), fontFile(params.av.wmFont));
    const p = params;
    const input = await source.file();
    const wmImage = p.wmImage !== undefined ? await prepareWatermark(p.wmImage, ctx) : undefined;
    const { contentType, ext } = avthumbOutput(p);
    const output = ctx.tempFile(ext);
    const files = { input, output, font: fontFile(p.wmFont), ...(wmImage ? { wmImage } : {}) };
    const redact: Record<string, string> = { [input]: 'input', [output]: 'output', ...(wmImage ? { [wmImage]: 'watermark' } : {}) };
    try {
      await runTool('avthumb', 'ffmpeg', avthumbArgs(p, files, ctx.limits.videoThreads), ctx, { redact });
    } catch (err) {
      if (err instanceof Error && /matches no streams/.test(err.message)) throw Errors.videoFailed('avthumb: the source has no video stream (add vn/1 for audio only)');
      if (err instanceof Error && /does not contain any stream/.test(err.message)) throw Errors.videoFailed('avthumb: the source has no stream this format can hold');
      throw err;
    }
    const size = await stat(output).then((s) => s.size, () => 0);
    if (size === 0) throw Errors.videoFailed('avthumb: nothing was encoded (ss past the end of the source?)');
    return { file: output, size, contentType };
  },
};
