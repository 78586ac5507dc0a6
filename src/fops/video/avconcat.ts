/**
 * `avconcat/…` (docs/development/kodo-protocol.md §10.6; parameters and argv: avconcat-args.ts): the source and
 * other entries of its bucket joined end to end, persistent only. Each resource is read through Granary's own
 * store (private buckets too: the job may read its source's bucket), never fetched over the network: a
 * `kodo://` entry of another bucket, or a URL that names no entry of this bucket on this server, is a 400. Every
 * input is probed with ffprobe (its streams and duration), then one ffmpeg run re-encodes them through the concat
 * filter into a temp file of the run (the command's output, stored at the saveas key).
 *
 * Errors: 400 bad parameters or resources, an input over GRANARY_VIDEO_MAX_SOURCE (also the sum), 404 a missing
 * resource, ffmpeg's failures (400).
 */
import { stat } from 'node:fs/promises';
import { Errors } from '../../errors.js';
import type { FopCommand, FopContext } from '../types.js';
import { avconcatArgs, type AvconcatParams, type ConcatInput, parseAvconcat } from './avconcat-args.js';
import { AVTHUMB_FORMATS } from './avthumb-args.js';
import { checkVideoSource, inputGuard, fileUrl } from './common.js';
import { runTool } from './spawn.js';

/** The key of the source's bucket that `resource` names; 400 when it names anything else. */
function resourceKey(resource: string, ctx: FopContext): string {
  const bucket = ctx.bucket.name;
  const kodo = /^kodo:\/\/([^/]+)\/(.+)$/i.exec(resource);
  if (kodo) {
    if (kodo[1] !== bucket) throw Errors.badRequest(`avconcat: ${resource}: only entries of the source's bucket ${bucket} can be concatenated`);
    return kodo[2] as string;
  }
  let key: string | undefined;
  try {
    key = ctx.urls?.keyOf(new URL(resource));
  } catch {
    key = undefined;
  }
  if (key === undefined || key === '') {
    throw Errors.badRequest(`avconcat: ${resource} names no entry of bucket ${bucket} on this server (other hosts are not fetched)`);
  }
  return key;
}

/** ffprobe's view of one input. */
async function probe(path: string, ctx: FopContext): Promise<ConcatInput> {
  const out = await runTool('avconcat', 'ffprobe', ['-v', 'error', ...inputGuard(), '-show_streams', '-show_format', '-of', 'json', fileUrl(path)], ctx, { redact: { [path]: 'input' } });
  const j = JSON.parse(out.toString('utf8')) as { format?: { duration?: string }; streams?: Array<{ codec_type?: string; width?: number; height?: number; avg_frame_rate?: string }> };
  const v = j.streams?.find((s) => s.codec_type === 'video' && (s.width ?? 0) > 0);
  const [num, den] = (v?.avg_frame_rate ?? '0/1').split('/').map(Number);
  const fps = num && den ? Math.round((num / den) * 1000) / 1000 : 0;
  return {
    path,
    duration: Number(j.format?.duration ?? 0) || 0,
    ...(v ? { video: { w: v.width as number, h: v.height as number, fps } } : {}),
    audio: j.streams?.some((s) => s.codec_type === 'audio') ?? false,
  };
}

export const avconcat: FopCommand<AvconcatParams> = {
  name: 'avconcat',
  pool: 'video',
  persistentOnly: true,
  parse: parseAvconcat,
  async run(source, p, ctx) {
    checkVideoSource('avconcat', source, ctx.limits);
    if (!ctx.bucketFile) throw Errors.internal('avconcat: no bucket access in this context');
    const paths: string[] = [];
    let total = source.size;
    for (const r of p.resources) {
      const file = await ctx.bucketFile(resourceKey(r, ctx));
      total += file.size;
      if (total > ctx.limits.maxVideoSourceBytes) {
        throw Errors.videoTooLarge(`avconcat: the inputs together exceed ${ctx.limits.maxVideoSourceBytes} bytes (GRANARY_VIDEO_MAX_SOURCE)`);
      }
      paths.push(file.path);
    }
    paths.splice(p.index - 1, 0, await source.file());
    const inputs: ConcatInput[] = [];
    for (const path of paths) inputs.push(await probe(path, ctx));
    const spec = AVTHUMB_FORMATS[p.format];
    const output = ctx.tempFile(spec?.ext ?? '.out');
    const redact = Object.fromEntries([...paths.map((path, i) => [path, `input ${i + 1}`]), [output, 'output']]);
    await runTool('avconcat', 'ffmpeg', avconcatArgs(p, inputs, output, ctx.limits.videoThreads), ctx, { redact });
    const size = await stat(output).then((st) => st.size, () => 0);
    if (size === 0) throw Errors.videoFailed('avconcat: nothing was encoded');
    return { file: output, size, contentType: spec?.contentType ?? 'application/octet-stream' };
  },
};
