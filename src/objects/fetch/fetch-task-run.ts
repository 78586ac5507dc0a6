/**
 * One attempt of an async-fetch task (docs/development/kodo-protocol.md §8.5) and its completion callback. The retry policy and the
 * scheduling live in fetch-worker.ts.
 *
 * An attempt: the submitter's key must still exist (401 otherwise) and may use the bucket (631/403); with
 * `ignore_same_key` and a `key`, an entry already under the key ends the task at once (done, `ignored`, nothing
 * fetched: Qiniu compares the key only, not the content) — and the commit uses insert semantics, so an entry
 * that appears meanwhile is kept too. Then each source URL is tried in order through `fetchToEntry` (guarded,
 * md5/etag checked before the commit) until one is stored.
 *
 * Retryable failures (worth another attempt later): the origin answered 5xx or could not be reached, timed
 * out (504), or storing failed (599). Others (404, other 4xx answers, 406 digest mismatch, 413, guard refusal,
 * bucket errors) are final.
 */
import { createHash } from 'node:crypto';
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError, toKodoError, type KodoError } from '../../errors.js';
import { renderFormTemplate, renderJsonTemplate, type UploadVars } from '../../policy/template.js';
import { nowSeconds } from '../../ports/clock.js';
import type { ObjectRecord } from '../../ports/meta.js';
import type { FetchTaskRecord } from '../../ports/fetch-tasks.js';
import { runUploadCallback } from '../callback.js';
import type { PutResult } from '../put-object.js';
import { uploadVars } from '../upload-response.js';
import { JSON_BODY_TYPE, splitSourceUrls, type AsyncFetchRequest, type AsyncFetchResult } from './async-fetch.js';
import { fetchToEntry } from './fetch-to-entry.js';

/** The outcome of one attempt: stored (with the upload variables for the callback) or failed. */
export type AttemptOutcome =
  | { ok: true; result: AsyncFetchResult; vars: UploadVars }
  | { ok: false; result: AsyncFetchResult; retryable: boolean };

/** Whether a failure is worth another attempt later (see the module comment). */
export function isRetryable(err: KodoError): boolean {
  switch (err.kind) {
    case 'originTimeout':
    case 'internal':
      return true;
    case 'originFailed': {
      // "the origin answered <status> for <url>" (openOrigin); any other 478 is a network failure.
      const answered = /the origin answered (\d{3}) for /.exec(err.message);
      return answered ? Number(answered[1]) >= 500 : true;
    }
    default:
      return false;
  }
}

function asKodoError(err: unknown): KodoError {
  return toKodoError(err);
}

function entryFields(rec: ObjectRecord): AsyncFetchResult {
  return { key: rec.key, hash: rec.hash, fsize: rec.fsize, mimeType: rec.mimeType };
}

/** The live entry under `key` (an expired one counts as absent). */
async function liveEntry(g: Granary, bucket: string, key: string): Promise<ObjectRecord | undefined> {
  const rec = await g.meta.getObject(bucket, key);
  if (!rec || (rec.expireAt !== undefined && rec.expireAt <= nowSeconds(g.clock))) return undefined;
  return rec;
}

function ignored(rec: ObjectRecord, accessKey: string): AttemptOutcome {
  const put: PutResult = { record: rec, accessKey, fname: '', custom: {} };
  return { ok: true, result: { ...entryFields(rec), ignored: true }, vars: uploadVars(put) };
}

function failure(err: KodoError, retryable: boolean, message = err.message): AttemptOutcome {
  return { ok: false, result: { error: message, code: err.status }, retryable };
}

/** Runs one attempt of `task` (whose parsed request is `req`); never throws. */
export async function attemptFetchTask(g: Granary, task: FetchTaskRecord, req: AsyncFetchRequest): Promise<AttemptOutcome> {
  const { accessKey } = task;
  if (!g.keyIndex.pairOf(accessKey)) return failure(Errors.unknownAccessKey(), false);
  try {
    await authorizeBucket(g, accessKey, req.bucket, { action: 'kodo/Fetchfiles', ...(req.key !== undefined ? { key: req.key } : {}) });
  } catch (err) {
    const e = asKodoError(err);
    return failure(e, isKodoError(e, 'internal'));
  }
  const insertOnly = req.ignore_same_key === true && req.key !== undefined;
  if (insertOnly) {
    const existing = await liveEntry(g, req.bucket, req.key as string).catch(() => undefined);
    if (existing) return ignored(existing, accessKey);
  }

  const sources = splitSourceUrls(req.url);
  const failures: string[] = [];
  let last: KodoError = Errors.badFetchUrl('no source URL');
  let retryable = false;
  for (const url of sources) {
    try {
      const put = await fetchToEntry(
        g,
        accessKey,
        { url, ...(req.host !== undefined ? { host: req.host } : {}) },
        { bucket: req.bucket, ...(req.key !== undefined ? { key: req.key } : {}) },
        {
          insertOnly,
          expect: { ...(req.md5 !== undefined ? { md5: req.md5 } : {}), ...(req.etag !== undefined ? { etag: req.etag } : {}) },
          ...(req.file_type !== undefined ? { fileType: req.file_type } : {}),
        },
      );
      g.metrics?.upload('async-fetch', put.record.fsize);
      return { ok: true, result: entryFields(put.record), vars: uploadVars(put) };
    } catch (err) {
      const e = asKodoError(err);
      if (insertOnly && isKodoError(e, 'fileExists')) {
        const existing = await liveEntry(g, req.bucket, req.key as string).catch(() => undefined);
        if (existing) return ignored(existing, accessKey);
      }
      last = e;
      retryable ||= isRetryable(e);
      failures.push(sources.length > 1 ? `${url}: ${e.message}` : e.message);
    }
  }
  return failure(last, retryable, failures.join('; '));
}

/** Renders the success callback body: `callbackbody` with the upload variables (form or JSON, §3.3). */
function successBody(req: AsyncFetchRequest, vars: UploadVars): string {
  const tpl = req.callbackbody ?? '';
  const render = (v: UploadVars): string =>
    req.callbackbodytype === JSON_BODY_TYPE ? renderJsonTemplate(tpl, v, 'callbackbody') : renderFormTemplate(tpl, v);
  const first = render(vars);
  if (!/\$[({]\s*bodySha1\s*[)}]/.test(tpl)) return first;
  return render({ ...vars, bodySha1: createHash('sha1').update(first).digest('hex') });
}

/**
 * The failure callback body (Qiniu's "special JSON callback"): the task's request fields plus `id`, `err` (the
 * error message) and `code` (its Kodo status), always `application/json`.
 */
export function failureBody(taskId: string, req: AsyncFetchRequest, result: AsyncFetchResult): string {
  return JSON.stringify({ id: taskId, ...req, err: result.error ?? '', code: result.code ?? 599 });
}

/**
 * Sends the completion callback of a finished task when it has a `callbackurl`: on success the rendered
 * `callbackbody` (its `callbackbodytype`), on failure `failureBody` as JSON; signed with the submitter's key pair
 * (QBox, §2.6), through the outbound guard, each `;`-separated URL in turn (upload-callback rules: the
 * application answers 200 with JSON). Returns undefined when sent (or no callback is set), else why it failed.
 */
export async function sendFetchCallback(
  g: Granary,
  task: FetchTaskRecord,
  req: AsyncFetchRequest,
  outcome: AttemptOutcome,
): Promise<string | undefined> {
  if (!req.callbackurl) return undefined;
  const pair = g.keyIndex.pairOf(task.accessKey);
  if (!pair) return 'not sent: the access key of the task no longer exists';
  try {
    const ok = outcome.ok;
    await runUploadCallback({
      callbackUrl: req.callbackurl,
      ...(req.callbackhost !== undefined ? { callbackHost: req.callbackhost } : {}),
      body: ok ? successBody(req, outcome.vars) : failureBody(task.id, req, outcome.result),
      bodyType: ok ? (req.callbackbodytype ?? '') : JSON_BODY_TYPE,
      accessKey: pair.accessKey,
      secretKey: pair.secretKey,
      policy: g.outbound,
      timeoutMs: g.config.callbackTimeoutSeconds * 1000,
      maxBodyBytes: 1024 * 1024,
    });
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
