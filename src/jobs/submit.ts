/**
 * Submitting persistent jobs (docs/development/kodo-protocol.md §9.1, §4.4) and reading their status (§9.2), without HTTP types.
 *
 * Validation (the same for `POST /pfop/` and for a put policy's persistentOps, before anything is queued):
 * 400 `fops` empty, more than 20 commands, an unknown command, bad parameters or a bad saveas entry (the
 * message names the command) — for a put policy these fail the job instead, the upload is stored; 400 a pipeline that does not exist (named); 400 a type other than 0/1; 400 a notify
 * URL that is not http(s); 631/403 a saveas bucket that is missing or another account's. pfop also checks the
 * source: 631/403 its bucket, 612 a missing key.
 *
 * Status: 400 for an id that cannot be one of ours (see PERSISTENT_ID), 612 for an unknown id. Ids are 96-bit
 * random, so a status is answered to anyone who has the id (the Node SDK's prefop sends no credentials).
 */
import { randomBytes } from 'node:crypto';
import { authorizeBucket } from '../auth/authorize.js';
import type { Granary } from '../context.js';
import { Errors, isKodoError } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import { commandStages, commandTexts, splitCommands } from './commands.js';
import { DEFAULT_PIPELINE } from './pipelines.js';
import { itemsOf, prefopRecord, type PrefopRecord } from './record.js';

/** A job to submit. `pipeline` undefined or '' → `0.default`. */
export interface JobRequest {
  bucket: string;
  key: string;
  fops: string;
  notifyUrl?: string;
  pipeline?: string;
  type: number;
  force: boolean;
  /** X-Reqid of the submitting request ('' when unknown). */
  reqId: string;
  /** `pfop` or `upload`. */
  taskFrom: string;
}

/** What a persistentId looks like: `<region>.<24 hex digits>`, at most 128 characters of `[A-Za-z0-9._-]`. */
export const PERSISTENT_ID = /^[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9._-]{1,63}$/;

/** A new persistentId: the region and 24 random hex digits. */
export function newPersistentId(g: Granary): string {
  return `${g.config.region}.${randomBytes(12).toString('hex')}`;
}

/**
 * Checks everything about `req` but the source object (see the module comment); throws Kodo errors.
 * `commandsAtRun`: commands that do not parse (unknown command, bad parameters, bad saveas) are left for the run,
 * where the job ends failed (prefop code 3, the reason in `desc`/`error`) — a put policy's persistentOps, so that
 * the upload is stored as Kodo stores it; the pipeline, type and notify URL are checked either way.
 */
export async function validateJob(
  g: Granary,
  accessKey: string,
  req: Omit<JobRequest, 'key' | 'reqId' | 'taskFrom'>,
  options: { commandsAtRun?: boolean } = {},
): Promise<void> {
  const commands = parsedCommands(req.fops, options.commandsAtRun === true);
  const pipeline = req.pipeline || DEFAULT_PIPELINE;
  if (!(await g.jobs.getPipeline(pipeline))) throw Errors.unknownPipeline(pipeline);
  if (req.type !== 0 && req.type !== 1) throw Errors.badRequest('type must be 0 or 1');
  if (req.notifyUrl !== undefined && req.notifyUrl !== '') checkNotifyUrl(req.notifyUrl);
  for (const c of commands) if (c.saveas) await authorizeBucket(g, accessKey, c.saveas.bucket, { action: 'kodo/Upload', key: c.saveas.key });
}

/** The commands of `fops`, each checked (400 naming it); with `lenient`, none when any of them is malformed. */
function parsedCommands(fops: string, lenient: boolean): ReturnType<typeof splitCommands> {
  try {
    const commands = splitCommands(fops);
    for (const c of commands) commandStages(c);
    return commands;
  } catch (err) {
    if (lenient && isKodoError(err) && err.status === 400) return [];
    throw err;
  }
}

/** 400 unless `url` is an http(s) URL (a job's notify URL). */
export function checkNotifyUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw Errors.badRequest(`notifyURL ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw Errors.badRequest('notifyURL must be http(s)');
}

/** Queues a validated job (the worker is woken by the queue); returns its persistentId. */
export async function enqueueJob(g: Granary, accessKey: string, req: JobRequest): Promise<string> {
  const id = newPersistentId(g);
  await g.jobs.enqueue({
    id,
    accessKey,
    bucket: req.bucket,
    key: req.key,
    fops: req.fops,
    ...(req.notifyUrl ? { notifyUrl: req.notifyUrl } : {}),
    pipeline: req.pipeline || DEFAULT_PIPELINE,
    type: req.type,
    force: req.force,
    reqId: req.reqId,
    taskFrom: req.taskFrom,
    createdMs: g.clock.nowMs(),
  });
  return id;
}

/** `POST /pfop/`: checks the source (631/403/612) and the request, queues the job; returns its persistentId. */
export async function submitPfop(g: Granary, accessKey: string, req: JobRequest): Promise<string> {
  await authorizeBucket(g, accessKey, req.bucket, { action: 'kodo/Pfop', key: req.key });
  await validateJob(g, accessKey, req);
  const rec = await g.meta.getObject(req.bucket, req.key);
  if (!rec || (rec.expireAt !== undefined && rec.expireAt <= nowSeconds(g.clock))) {
    throw Errors.noSuchEntry(`${req.bucket}:${req.key}`);
  }
  return enqueueJob(g, accessKey, req);
}

/** The prefop record of `id`: 400 malformed id, 612 unknown. */
export async function jobStatus(g: Granary, id: string): Promise<PrefopRecord> {
  if (!PERSISTENT_ID.test(id)) throw Errors.badPersistentId(id.length > 80 ? `${id.slice(0, 80)}…` : id);
  const job = await g.jobs.get(id);
  if (!job) throw Errors.noSuchJob(id);
  return prefopRecord(job, itemsOf(job, commandTexts(job.fops)));
}
