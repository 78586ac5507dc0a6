/**
 * The commands of a persistent job (docs/development/kodo-protocol.md §9.1, §10.7): `fops` is a `;`-separated list of commands; each is
 * a fop pipeline (`cmd1/...|cmd2/...`) that may end with `|saveas/<EncodedEntryURI>` naming where its output is
 * stored. Every command is one item of the job (one output). Parsing is pure and deterministic: done at
 * submission (400 naming the command) and again when the job runs.
 */
import { createHash } from 'node:crypto';
import { urlsafeB64Encode } from '../auth/base64.js';
import { Errors, isKodoError } from '../errors.js';
import { parsePipeline } from '../fops/registry.js';
import type { FopStage } from '../fops/types.js';
import { decodeEntryTarget } from '../objects/manage/encoded-entry.js';

/** Most commands one job may carry. */
export const MAX_JOB_COMMANDS = 20;

/** One command of a job: its text as submitted, the text without saveas, and where its output goes. */
export interface JobCommand {
  /** The command as submitted (the record's `cmd`). */
  cmd: string;
  /** The pipeline text without `|saveas/…`. */
  pipeline: string;
  /** The `saveas` target; `key` undefined when the entry named only a bucket (a generated key then). */
  saveas?: { bucket: string; key?: string };
}

/** Splits `fops` into its commands (trimmed, empty ones dropped); 400 when none or too many. */
export function splitCommands(fops: string): JobCommand[] {
  const texts = fops
    .split(';')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  if (texts.length === 0) throw Errors.badFops('no command');
  if (texts.length > MAX_JOB_COMMANDS) throw Errors.badFops(`at most ${MAX_JOB_COMMANDS} commands`);
  return texts.map(splitSaveas);
}

/** The `cmd` texts of a stored job's commands (the whole `fops` as one when it no longer parses). Never throws. */
export function commandTexts(fops: string): string[] {
  try {
    return splitCommands(fops).map((c) => c.cmd);
  } catch {
    return [fops];
  }
}

/** Separates a trailing `|saveas/<EncodedEntryURI>` (only as the last segment) from a command. */
function splitSaveas(cmd: string): JobCommand {
  const bar = cmd.lastIndexOf('|');
  const last = cmd.slice(bar + 1);
  if (!last.startsWith('saveas/')) {
    if (/(^|\|)saveas(\/|$)/.test(cmd)) throw Errors.badFops(`${cmd}: saveas must end the command`);
    return { cmd, pipeline: cmd };
  }
  if (bar < 0) throw Errors.badFops(`${cmd}: saveas without a command`);
  const encoded = last.slice('saveas/'.length);
  let saveas: { bucket: string; key?: string };
  try {
    saveas = decodeEntryTarget(encoded);
  } catch (err) {
    throw Errors.badFops(`${cmd}: ${isKodoError(err) ? err.message : 'bad saveas entry'}`);
  }
  return { cmd, pipeline: cmd.slice(0, bar), saveas };
}

/** The stages of a command's pipeline (400 naming the command on an unknown command or bad parameters). */
export function commandStages(c: JobCommand): FopStage[] {
  return parsePipeline(c.pipeline, 'persistent');
}

/**
 * The key of a command's output when no saveas key is given (docs/development/kodo-protocol.md §9.2 shape): `<urlsafe-b64 SHA-1 of the
 * pipeline text, 28 characters>/<hash of the source>`. Deterministic, so running the same command on the same
 * content again finds its earlier output (`returnOld`) unless `force` is set.
 */
export function generatedKey(pipeline: string, sourceHash: string): string {
  return `${urlsafeB64Encode(createHash('sha1').update(pipeline).digest())}/${sourceHash}`;
}
