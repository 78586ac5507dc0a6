/**
 * The prefop record (docs/development/kodo-protocol.md §9.2), also the body POSTed to the notify URL (§9.3):
 *
 * `{id, pipeline, code, desc, reqid, inputBucket, inputKey, creationDate, type, taskFrom, items: [{cmd, code,
 * desc, error, hash, key, returnOld, errorIndex?}]}`
 *
 * State codes, for the job and for each item, with their `desc` (Qiniu's wording):
 * - 0 `The fop was completed successfully`
 * - 1 `The fop is waiting for execution`
 * - 2 `The fop is executing now` (for a job: running its commands, or notifying its notify URL)
 * - 3 `The fop is failed` (a job is 3 when any item is 3; the item carries `error` and `errorIndex`, the index
 *   of the failing stage within its `|` pipeline)
 * - 4 `Callback failed` (job only: every notify attempt failed; the items keep their codes)
 *
 * `creationDate` is the submission time in Beijing time with its offset (`2024-01-01T08:00:00.000+08:00`).
 * `taskFrom` is `pfop` for jobs submitted by the API and `upload` for persistentOps of a put policy.
 * An item's `hash`/`key` name the stored output (with `returnOld: 1`, the output that was already there);
 * both are `""` until the item succeeded.
 */
import type { JobRecord } from '../ports/job-queue.js';

/** The `desc` of each state code (see the module comment). */
export const JOB_DESC: Readonly<Record<number, string>> = {
  0: 'The fop was completed successfully',
  1: 'The fop is waiting for execution',
  2: 'The fop is executing now',
  3: 'The fop is failed',
  4: 'Callback failed',
};

/** One item of the record (one command of the job). */
export interface JobItem {
  cmd: string;
  code: number;
  desc: string;
  error: string;
  hash: string;
  key: string;
  returnOld: number;
  /** Every object a multi-output command stored (vsample frames), in order; `key`/`hash` name the first. */
  keys?: string[];
  /** Index of the failing stage of the command's pipeline (failures only). */
  errorIndex?: number;
}

/** The record as answered by prefop and sent to the notify URL. */
export interface PrefopRecord {
  id: string;
  pipeline: string;
  code: number;
  desc: string;
  reqid: string;
  inputBucket: string;
  inputKey: string;
  creationDate: string;
  type: number;
  taskFrom: string;
  items: JobItem[];
}

/** An item not run yet. */
export function pendingItem(cmd: string): JobItem {
  return { cmd, code: 1, desc: JOB_DESC[1]!, error: '', hash: '', key: '', returnOld: 0 };
}

/** A succeeded item: the output stored (or, `returnOld`, already there) under `key` with `hash`. */
export function doneItem(cmd: string, key: string, hash: string, returnOld: boolean): JobItem {
  return { cmd, code: 0, desc: JOB_DESC[0]!, error: '', hash, key, returnOld: returnOld ? 1 : 0 };
}

/** A failed item with its reason and the index of the failing stage. */
export function failedItem(cmd: string, error: string, errorIndex: number): JobItem {
  return { cmd, code: 3, desc: JOB_DESC[3]!, error, hash: '', key: '', returnOld: 0, errorIndex };
}

/** The item outcomes of a job: the saved ones, or every command pending. */
export function itemsOf(job: JobRecord, cmds: string[]): JobItem[] {
  if (job.items !== undefined) {
    try {
      const saved = JSON.parse(job.items) as JobItem[];
      if (Array.isArray(saved) && saved.length === cmds.length) return saved;
    } catch {
      // unreadable: fall back to pending items
    }
  }
  return cmds.map(pendingItem);
}

/** The code a job ends with once its items are final: 3 when any failed, else 0. */
export function finalCode(items: JobItem[]): number {
  return items.some((i) => i.code === 3) ? 3 : 0;
}

const BEIJING_OFFSET_MS = 8 * 3600 * 1000;

/** `ms` as ISO 8601 in Beijing time with its offset. */
export function creationDate(ms: number): string {
  return `${new Date(ms + BEIJING_OFFSET_MS).toISOString().slice(0, -1)}+08:00`;
}

/** Builds the record of `job` with its items (`code` overrides the stored code, e.g. for the notify body). */
export function prefopRecord(job: JobRecord, items: JobItem[], code = job.code): PrefopRecord {
  return {
    id: job.id,
    pipeline: job.pipeline,
    code,
    desc: JOB_DESC[code] ?? '',
    reqid: job.reqId,
    inputBucket: job.bucket,
    inputKey: job.key,
    creationDate: creationDate(job.createdMs),
    type: job.type,
    taskFrom: job.taskFrom,
    items,
  };
}
