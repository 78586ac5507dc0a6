/**
 * Async fetch (docs/development/kodo-protocol.md §8.5, api role): `POST /sisyphus/fetch` queues a task that a background worker
 * (fetch-worker.ts) runs later; `GET /sisyphus/fetch?id=` reports on it. This module validates the request,
 * queues it durably (ports/fetch-tasks.ts) and builds the status answer. Running a task: fetch-task-run.ts.
 *
 * Request (JSON object; unknown fields ignored): `url` (required; one or more http(s) URLs separated by `;`,
 * tried in order), `bucket` (required), `host` (Host header sent to the origin), `key` (absent or empty → the
 * etag is the key), `md5` (32 hex digits) and `etag` (checked before the commit: a mismatch fails the task and
 * stores nothing), `callbackurl` (`;`-separated http(s) URLs; needs `callbackbody`), `callbackbody` (template
 * with the upload variables, §3.2–3.3), `callbackbodytype` (`application/x-www-form-urlencoded` default, or
 * `application/json`), `callbackhost`, `file_type` (0..4, number or numeric string), `ignore_same_key` (boolean,
 * `"true"`/`"false"` or 0/1).
 *
 * Submission errors: 400 body not a JSON object, missing/invalid `url` or `bucket`, bad field types, key over
 * 750 bytes, `callbackurl` without `callbackbody`, a JSON `callbackbody` that cannot render to JSON; 631 no such
 * bucket; 403 another account's bucket (checked again when the task runs).
 *
 * Completion: `ignore_same_key` with a `key` that exists ends the task `done` with `ignored: true`, nothing
 * fetched (Qiniu compares the key only); without a `key` it has no effect (the etag is the key, identical content
 * is never stored twice). The success callback renders `callbackbody` with the entry's variables (for an ignored
 * task, the existing entry's; `$(fname)` is the last segment of the source URL path, empty when ignored); the
 * failure callback is JSON: the request fields plus `id`, `err` (message) and `code` (Kodo status). A failed
 * callback is recorded as `callbackError` and does not change the task's state.
 *
 * `wait` (submission and status): for a task never tried yet, the number of tasks ahead of it (running ones plus
 * waiting ones claimed before it); 0 while it runs; -1 once it has been tried at least once and is not running
 * (waiting for a retry, done or failed).
 */
import { randomBytes } from 'node:crypto';
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import { validateJsonTemplate } from '../../policy/template.js';
import { MAX_KEY_BYTES } from '../../policy/scope.js';
import { splitCallbackUrls } from '../callback.js';
import { checkSourceUrl } from './source-url.js';

/** Form callback body type (the default) and the JSON one. */
export const FORM_BODY_TYPE = 'application/x-www-form-urlencoded';
export const JSON_BODY_TYPE = 'application/json';

/** A validated async-fetch request, as queued (field names as on the wire). */
export interface AsyncFetchRequest {
  /** One or more source URLs separated by `;`. */
  url: string;
  bucket: string;
  host?: string;
  key?: string;
  /** Lower-case hex. */
  md5?: string;
  etag?: string;
  callbackurl?: string;
  callbackbody?: string;
  /** Normalised to FORM_BODY_TYPE or JSON_BODY_TYPE when a callback is set. */
  callbackbodytype?: string;
  callbackhost?: string;
  file_type?: number;
  ignore_same_key?: boolean;
}

/** What a task ended with (or, while it waits for a retry, its last error). */
export interface AsyncFetchResult {
  /** The entry stored (or, with `ignored`, the one already there). */
  key?: string;
  hash?: string;
  fsize?: number;
  mimeType?: string;
  /** `ignore_same_key`: the key existed, nothing was fetched. */
  ignored?: boolean;
  /** Failure: message and Kodo status code (as the sync fetch would answer). */
  error?: string;
  code?: number;
  /** The completion callback failed (the task's state is unaffected). */
  callbackError?: string;
}

/** Task ids: the region and 24 random hex digits (URL-safe, opaque to clients). */
function newTaskId(g: Granary): string {
  return `${g.config.region}.fetch.${randomBytes(12).toString('hex')}`;
}

const bad = (detail: string) => Errors.badRequest(detail);

/** A string field: absent, null or '' → undefined; any other non-string → 400. */
function optString(o: Record<string, unknown>, name: string): string | undefined {
  const v = o[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw bad(`${name} must be a string`);
  return v;
}

function requiredString(o: Record<string, unknown>, name: string): string {
  const v = optString(o, name)?.trim();
  if (!v) throw bad(`${name} is required`);
  return v;
}

function optFileType(o: Record<string, unknown>): number | undefined {
  const v = o.file_type;
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 4) throw bad('file_type must be 0..4');
  return n;
}

function optBoolean(o: Record<string, unknown>, name: string): boolean | undefined {
  const v = o[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (v === true || v === 'true' || v === 1 || v === '1') return true;
  if (v === false || v === 'false' || v === 0 || v === '0') return false;
  throw bad(`${name} must be a boolean`);
}

/** The source URLs of a request's `url`, in order (trimmed, empty items dropped). */
export function splitSourceUrls(url: string): string[] {
  return url
    .split(';')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
}

function checkCallbackUrls(value: string): void {
  const urls = splitCallbackUrls(value);
  if (urls.length === 0) throw bad('callbackurl names no URL');
  for (const u of urls) {
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      throw bad(`callbackurl ${JSON.stringify(u)} is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw bad('callbackurl must be http(s)');
  }
}

/** Parses and validates the JSON body of `POST /sisyphus/fetch` (400 on any problem, see the module comment). */
export function parseAsyncFetchRequest(body: Buffer | undefined): AsyncFetchRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(body?.toString('utf8') ?? '');
  } catch {
    throw bad('the body must be a JSON object');
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw bad('the body must be a JSON object');
  const o = raw as Record<string, unknown>;

  const url = requiredString(o, 'url');
  const sources = splitSourceUrls(url);
  if (sources.length === 0) throw bad('url is required');
  for (const u of sources) checkSourceUrl(u);
  const req: AsyncFetchRequest = { url: sources.join(';'), bucket: requiredString(o, 'bucket') };

  const host = optString(o, 'host');
  if (host !== undefined) req.host = host;
  const key = optString(o, 'key');
  if (key !== undefined) {
    if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw Errors.keyTooLong();
    req.key = key;
  }
  const md5 = optString(o, 'md5');
  if (md5 !== undefined) {
    if (!/^[0-9a-fA-F]{32}$/.test(md5)) throw bad('md5 must be 32 hex digits');
    req.md5 = md5.toLowerCase();
  }
  const etag = optString(o, 'etag');
  if (etag !== undefined) req.etag = etag;

  const callbackurl = optString(o, 'callbackurl');
  const callbackbody = optString(o, 'callbackbody');
  const bodyType = optString(o, 'callbackbodytype');
  const callbackhost = optString(o, 'callbackhost');
  if (callbackurl !== undefined) {
    checkCallbackUrls(callbackurl);
    if (callbackbody === undefined) throw bad('callbackbody is required with callbackurl');
    req.callbackurl = callbackurl;
    req.callbackbody = callbackbody;
    req.callbackbodytype = bodyType?.trim().toLowerCase().startsWith(JSON_BODY_TYPE) ? JSON_BODY_TYPE : FORM_BODY_TYPE;
    if (req.callbackbodytype === JSON_BODY_TYPE) {
      try {
        validateJsonTemplate(callbackbody, 'callbackbody');
      } catch (err) {
        throw isKodoError(err) ? bad('callbackbody is not valid JSON after rendering') : err;
      }
    }
    if (callbackhost !== undefined) req.callbackhost = callbackhost;
  }

  const fileType = optFileType(o);
  if (fileType !== undefined) req.file_type = fileType;
  const ignoreSameKey = optBoolean(o, 'ignore_same_key');
  if (ignoreSameKey !== undefined) req.ignore_same_key = ignoreSameKey;
  return req;
}

/**
 * Queues a validated request for `accessKey` after checking the bucket (631 missing, 403 another account's).
 * Returns the answer of `POST /sisyphus/fetch`: `{id, wait}` (wait = tasks ahead of it).
 */
export async function submitAsyncFetch(
  g: Granary,
  accessKey: string,
  req: AsyncFetchRequest,
): Promise<{ id: string; wait: number }> {
  await authorizeBucket(g, accessKey, req.bucket, { action: 'kodo/Fetchfiles', ...(req.key !== undefined ? { key: req.key } : {}) });
  const id = newTaskId(g);
  const { ahead } = await g.meta.fetchTasks.enqueue({
    id,
    accessKey,
    request: JSON.stringify(req),
    createdMs: g.clock.nowMs(),
  });
  return { id, wait: ahead };
}

/**
 * The answer of `GET /sisyphus/fetch?id=`: `{id, wait, state, attempts}` plus the result fields (`key`, `hash`,
 * `fsize`, `mimeType`, `ignored`; `error` and `code` for a failure — or, while waiting for a retry, of the last
 * attempt; `callbackError`). 612 when the id is unknown or the task belongs to another account (the root key
 * sees every task).
 */
export async function asyncFetchStatus(g: Granary, accessKey: string, id: string): Promise<Record<string, unknown>> {
  const task = await g.meta.fetchTasks.get(id);
  if (!task || (task.accessKey !== accessKey && !g.keyIndex.isRoot(accessKey))) throw Errors.noSuchTask(id);
  const wait = task.state === 'running' ? 0 : task.attempts > 0 ? -1 : task.ahead;
  let result: AsyncFetchResult = {};
  if (task.result !== undefined) {
    try {
      result = JSON.parse(task.result) as AsyncFetchResult;
    } catch {
      result = {};
    }
  }
  return { id: task.id, wait, state: task.state, attempts: task.attempts, ...result };
}
