/**
 * Locating the external programs fops run as subprocesses (ffmpeg, ffprobe, heif-convert, soffice): the configured path
 * (GRANARY_FFMPEG, GRANARY_FFPROBE, GRANARY_HEIF_CONVERT, GRANARY_SOFFICE) or the first executable of that name on PATH.
 * A missing program is `undefined`: the commands that need it answer 415 naming it, everything else works.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Config } from '../config.js';
import type { FopTools } from './types.js';

/** The first executable `name` on `PATH`, if any. */
export function findOnPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The programs available to fops under `config`. */
export function locateTools(config: Pick<Config, 'ffmpegPath' | 'ffprobePath' | 'heifConvertPath'> & Partial<Pick<Config, 'sofficePath'>>): FopTools {
  const tools: FopTools = {};
  const ffmpeg = config.ffmpegPath ?? findOnPath('ffmpeg');
  const ffprobe = config.ffprobePath ?? findOnPath('ffprobe');
  const heifConvert = config.heifConvertPath ?? findOnPath('heif-convert');
  if (ffmpeg) tools.ffmpeg = ffmpeg;
  if (ffprobe) tools.ffprobe = ffprobe;
  if (heifConvert) tools.heifConvert = heifConvert;
  const soffice = config.sofficePath ?? findOnPath('soffice');
  if (soffice) tools.soffice = soffice;
  return tools;
}
