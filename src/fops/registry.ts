/**
 * The registry of fop commands (docs/development/kodo-protocol.md §10.1) and the pipeline parser: `cmd1/k/v/...|cmd2|...`.
 * Unknown commands and bad parameters are 400 `<command>: <what is wrong>`.
 */
import { Errors } from '../errors.js';
import { exif } from './exif-command.js';
import { yifangyunPreview } from './files/doc-convert.js';
import { imageslim } from './files/imageslim.js';
import { md2html } from './files/md2html.js';
import { mkzip } from './files/mkzip.js';
import { qhash } from './files/qhash.js';
import { qrcode } from './files/qrcode.js';
import { imageAve } from './image-ave.js';
import { imageInfo } from './image-info.js';
import { imageMogr2 } from './image-mogr2.js';
import { imageView2 } from './image-view2.js';
import { nrop } from './nrop.js';
import type { FopCommand, FopStage } from './types.js';
import { avconcat } from './video/avconcat.js';
import { avinfo } from './video/avinfo.js';
import { avthumb } from './video/avthumb.js';
import { pm3u8 } from './video/pm3u8.js';
import { vframe } from './video/vframe.js';
import { vsample } from './video/vsample.js';
import { watermark } from './watermark.js';

const COMMANDS = new Map<string, FopCommand>(
  ([imageInfo, imageAve, imageView2, imageMogr2, watermark, exif, nrop, avconcat, avinfo, vframe, avthumb, pm3u8, vsample, imageslim, mkzip, qhash, md2html, qrcode, yifangyunPreview] as FopCommand[]).map((c) => [c.name, c]),
);
const MAX_STAGES = 10;

/** The command named `name`, if registered. */
export function commandOf(name: string): FopCommand | undefined {
  return COMMANDS.get(name);
}

/** Where a pipeline runs: on a download URL (synchronously) or as a persistent job. */
export type PipelineMode = 'url' | 'persistent';

/**
 * Parses a (percent-decoded) pipeline into stages (400 naming the command on an unknown command or a bad
 * parameter; a persistent-only command on a download URL is 400 too).
 */
export function parsePipeline(query: string, mode: PipelineMode = 'url'): FopStage[] {
  const parts = query.split('|');
  if (parts.length > MAX_STAGES) throw Errors.badRequest(`fop: at most ${MAX_STAGES} stages`);
  return parts.map((text) => {
    const [name = '', ...args] = text.split('/');
    if (name === '') throw Errors.badRequest('fop: empty command');
    // A trailing `/` (`imageView2/1/w/200/`) is tolerated.
    if (args.length > 0 && args[args.length - 1] === '') args.pop();
    const cmd = COMMANDS.get(name);
    if (!cmd) throw Errors.badRequest(`${name}: unknown command`);
    if (cmd.persistentOnly && mode === 'url') {
      throw Errors.badRequest(`${name}: runs only as a persistent command (pfop or persistentOps), not on a download URL`);
    }
    const ignoreError = stripIgnoreError(name, args);
    const stage: FopStage = { name, params: cmd.parse(args) };
    if (ignoreError) stage.ignoreError = true;
    return stage;
  });
}

/**
 * Removes every `ignore-error/<0|1>` pair from a stage's arguments (in place), so every command accepts it;
 * true when one was `1`. `ignore-error` with another value is a 400.
 */
function stripIgnoreError(name: string, args: string[]): boolean {
  let on = false;
  for (let i = 0; i < args.length; ) {
    if (args[i] !== 'ignore-error') {
      i++;
      continue;
    }
    const v = args[i + 1];
    if (v !== '0' && v !== '1') throw Errors.badRequest(`${name}: ignore-error must be 0 or 1, got ${JSON.stringify(v ?? '')}`);
    on ||= v === '1';
    args.splice(i, 2);
  }
  return on;
}

/** Whether any stage of the pipeline carried `/ignore-error/1`. */
export function ignoresErrors(stages: readonly FopStage[]): boolean {
  return stages.some((s) => s.ignoreError === true);
}
