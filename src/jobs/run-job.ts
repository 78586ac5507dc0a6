/**
 * Running the commands of one claimed job (docs/development/kodo-protocol.md §9, §10.7). For each command not finished yet, in order:
 *
 * 1. target: the saveas entry, or a generated key in the source bucket (commands.ts `generatedKey`); a saveas
 *    entry naming only a bucket gets a generated key in that bucket;
 * 2. without `force`, a target already present is kept: the item succeeds with `returnOld: 1` and the old
 *    object's hash and key, nothing runs;
 * 3. the command runs through `executeFops` (the fop pools bound the CPU, GRANARY_JOB_TIMEOUT bounds the time each
 *    command runs — waiting for a pool slot behind other commands is not counted —, shutdown aborts it);
 * 4. the result (bytes, a temp file, or JSON stored as an `application/json` object) is stored through
 *    `putObject` with the submitter's rights (insert semantics without `force`: an object that appeared meanwhile
 *    is kept and reported as `returnOld`);
 * 5. the item's outcome is saved at once (the last one with the job's end), so a job interrupted later resumes
 *    after it. While a command runs its item still shows code 1; the job shows 2.
 *
 * A failing command makes its item code 3 (`error`, `errorIndex`) and the job goes on with the next command.
 * A job claimed more often than GRANARY_JOB_ATTEMPTS (it was interrupted by crashes each time) fails its
 * unfinished items. Between a command's commit and the saving of its outcome there is a small window: a crash
 * exactly there runs that command once more (its output is then reported as `returnOld`, or rewritten with force).
 */
import { createReadStream } from 'node:fs';
import type { Granary } from '../context.js';
import { Errors, isKodoError, toKodoError } from '../errors.js';
import { executeFops, resultStream } from '../fops/execute.js';
import { commandOf } from '../fops/registry.js';
import { failedStageOf } from '../fops/run.js';
import type { SideOutputs } from '../fops/types.js';
import { putObject } from '../objects/put-object.js';
import { receiveBody } from '../objects/receive.js';
import { parsePutPolicy } from '../policy/put-policy.js';
import { nowSeconds } from '../ports/clock.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { commandStages, generatedKey, splitCommands, type JobCommand } from './commands.js';
import type { JobRecord } from '../ports/job-queue.js';
import { doneItem, failedItem, itemsOf, type JobItem } from './record.js';

/** The internal put policy of an output never expires. */
const NO_DEADLINE = 0xffffffff;

/** What a run ended with: every item final, or interrupted by `signal` (the job is to be released). */
export type JobRunOutcome = { aborted: false; items: JobItem[] } | { aborted: true };

/** The text of a failed item: the catalogue message (a storage failure names the problem, never a path). */
function message(err: unknown): string {
  return toKodoError(err).message;
}

/** The live object (expired counts as absent). */
async function live(g: Granary, bucket: string, key: string): Promise<ObjectRecord | undefined> {
  const rec = await g.meta.getObject(bucket, key);
  return rec && (rec.expireAt === undefined || rec.expireAt > nowSeconds(g.clock)) ? rec : undefined;
}


/**
 * The side objects of a command (HLS segments, vsample frames): each stored at once in the output's `bucket`
 * through `putObject` with the submitter's rights, overwriting (they belong to the output being made).
 */
function sideOutputs(g: Granary, job: JobRecord, bucket: string, key: string): SideOutputs {
  const stored: Array<{ key: string; hash: string }> = [];
  return {
    bucket,
    key,
    stored,
    async store(sideKey, file, contentType) {
      const body = await receiveBody(g, createReadStream(file), { maxBytes: g.config.maxObjectBytes, inlineMax: g.config.inlineMaxBytes });
      const policy = parsePutPolicy({ scope: `${bucket}:${sideKey}`, deadline: NO_DEADLINE });
      const put = await putObject(g, body, { policy, accessKey: job.accessKey, clientKey: sideKey, clientMime: contentType, fname: '', custom: {}, meta: {} });
      g.metrics?.upload('pfop-output', put.record.fsize);
      stored.push({ key: sideKey, hash: put.record.hash });
      return put.record.hash;
    },
  };
}

/** Runs one command and stores its output; returns the item. Rethrows nothing but an abort by `signal`. */
async function runCommand(
  g: Granary,
  job: JobRecord,
  source: { bucket: BucketRecord; object: ObjectRecord },
  c: JobCommand,
  signal: AbortSignal,
): Promise<JobItem> {
  let stageCount = 0;
  try {
    const stages = commandStages(c);
    stageCount = stages.length;
    const bucket = c.saveas?.bucket ?? job.bucket;
    const key = c.saveas?.key ?? generatedKey(c.pipeline, source.object.hash);
    if (!job.force) {
      const old = await live(g, bucket, key);
      if (old) return doneItem(c.cmd, key, old.hash, true);
    }
    const outputs = sideOutputs(g, job, bucket, key);
    const run = await executeFops(g, source.bucket, source.object, stages, { timeoutSeconds: g.config.jobTimeoutSeconds, signal, countQueueWait: false, outputs });
    try {
      if (stages.some((s) => commandOf(s.name)?.storesItsOutputs === true)) {
        const first = outputs.stored[0];
        if (!first) throw Errors.videoFailed(`${stages[0]?.name ?? 'fop'}: nothing was produced`);
        return { ...doneItem(c.cmd, first.key, first.hash, false), keys: outputs.stored.map((o) => o.key) };
      }
      const { stream, contentType } = resultStream(run.result);
      const body = await receiveBody(g, stream, { maxBytes: g.config.maxObjectBytes, inlineMax: g.config.inlineMaxBytes });
      const policy = parsePutPolicy({ scope: `${bucket}:${key}`, deadline: NO_DEADLINE, ...(job.force ? {} : { insertOnly: 1 }) });
      try {
        const put = await putObject(g, body, { policy, accessKey: job.accessKey, clientKey: key, clientMime: contentType, fname: '', custom: {}, meta: {} });
        g.metrics?.upload('pfop-output', put.record.fsize);
        return doneItem(c.cmd, key, put.record.hash, false);
      } catch (err) {
        // Insert semantics: an output that appeared meanwhile is kept, as if it had been there before.
        if (isKodoError(err, 'fileExists')) {
          const old = await live(g, bucket, key);
          if (old) return doneItem(c.cmd, key, old.hash, true);
        }
        throw err;
      }
    } finally {
      await run.dispose();
    }
  } catch (err) {
    if (signal.aborted) throw err;
    const stage = failedStageOf(err);
    return failedItem(c.cmd, message(err), Math.min(stage ?? 0, Math.max(stageCount - 1, 0)));
  }
}

/**
 * Runs the unfinished commands of `job` (claimed, `running`), saving each outcome as it finishes. Resolves with
 * the final items, or `{aborted: true}` when `signal` aborted (outcomes saved so far stay) or the job was taken
 * away (released) meanwhile.
 */
export async function runJobCommands(g: Granary, job: JobRecord, signal: AbortSignal): Promise<JobRunOutcome> {
  let commands: JobCommand[];
  try {
    commands = splitCommands(job.fops);
  } catch (err) {
    return { aborted: false, items: [failedItem(job.fops, message(err), 0)] };
  }
  const items = itemsOf(job, commands.map((c) => c.cmd));
  const unfinished = items.map((it, i) => (it.code === 1 || it.code === 2 ? i : -1)).filter((i) => i >= 0);
  if (unfinished.length === 0) return { aborted: false, items };

  const fail = (error: string): JobRunOutcome => {
    for (const i of unfinished) items[i] = failedItem(commands[i]!.cmd, error, 0);
    return { aborted: false, items };
  };
  if (job.attempts > g.config.jobAttempts) {
    return fail(`the job was interrupted ${job.attempts - 1} times (GRANARY_JOB_ATTEMPTS is ${g.config.jobAttempts})`);
  }
  const { bucket, object } = await g.meta.getBucketAndObject(job.bucket, job.key);
  if (!bucket || !object || (object.expireAt !== undefined && object.expireAt <= nowSeconds(g.clock))) {
    return fail(Errors.noSuchEntry(`${job.bucket}:${job.key}`).message);
  }

  const save = (): Promise<boolean> => g.jobs.saveItems(job.id, JSON.stringify(items), g.clock.nowMs());
  for (const [n, i] of unfinished.entries()) {
    if (signal.aborted) return { aborted: true };
    try {
      items[i] = await runCommand(g, job, { bucket, object }, commands[i]!, signal);
    } catch {
      return { aborted: true };
    }
    // The last outcome is saved with the job's end (JobQueue.endItems): one durable write less per job.
    if (n < unfinished.length - 1 && !(await save())) return { aborted: true };
  }
  return { aborted: false, items };
}
