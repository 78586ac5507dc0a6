/**
 * putObject: the one commit path of every upload kind (form upload now; mkfile, multipart complete, fetch and
 * fop outputs later). Applies the put policy (docs/development/kodo-protocol.md §3.1), makes the bytes visible atomically and returns
 * what the response renderer needs.
 *
 * Order: deadline (401) → bucket (631 missing, 403 another account's) → size limits (403/413) → crc32 (406) → MIME (403) → key (400/403)
 * → persistentOps or workflow template (400 bad commands, unknown template or pipeline) → seal blob → atomic
 * metadata commit (614 under insert semantics; a caller's precondition's error; 403 when the bucket's quota would be passed, checked inside the
 * commit transaction: buckets/quota.ts; the bucket's event notifications of the new entry are written in the same
 * transaction) → free replaced blobs → queue the job (jobs/upload-job.ts; the worker is woken).
 * Any failure before the commit discards the staged bytes: the entry already under the key is untouched.
 * An assembled body (v1 mkfile, v2 complete) commits a manifest of its pieces instead of a blob, in the same
 * transaction, consuming its resumable session there (objects/resumable/assemble.ts): nothing is copied.
 */
import { ACCOUNT, authorizeBucket, authorizeRecord } from '../auth/authorize.js';
import { withDefaultEncryption } from '../buckets/encryption.js';
import { quotaExceeded } from '../buckets/quota.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { eventsFor } from '../events/outbox.js';
import { enqueueUploadJob, uploadJob } from '../jobs/upload-job.js';
import { expiryFromDays } from '../policy/expiry.js';
import { detectMimeType, checkMimeLimit } from '../policy/mime.js';
import { checkDeadline, checkSizeLimits, type PutPolicy } from '../policy/put-policy.js';
import { checkKeyAllowed, insertSemantics, resolveKey } from '../policy/scope.js';
import { nowSeconds } from '../ports/clock.js';
import type { ObjectRecord, PutPrecondition } from '../ports/meta.js';
import type { PutBody } from './receive.js';
import { releaseBlobs } from './blobs.js';
import type { ObjectLock } from '../ports/object-lock.js';

/** What the client sent besides the bytes. Custom variables keep their `x:` prefix; meta names have none. */
export interface PutRequest {
  policy: PutPolicy;
  /** AccessKey that signed the upload token: it must be allowed on the scope bucket. */
  accessKey: string;
  /** Key given by the client; undefined when none was sent ('' is a real, empty key). */
  clientKey?: string;
  fname?: string;
  clientMime?: string;
  /** `x:<name>` → value. */
  custom: Record<string, string>;
  /** metadata name (without `x-qn-meta-`) → value. */
  meta: Record<string, string>;
  /** CRC-32 the client claims for the content (form `crc32`), checked when present. */
  crc32?: number;
  /** Part sizes in bytes of a multipart upload (kept for `needparts`). */
  parts?: number[];
  /** X-Reqid of the upload request (recorded with a persistentOps job as its `reqid`). */
  reqId?: string;
  /** The event notification it triggers: `mkfile` for resumable completions (v1 mkfile, v2 complete), else `put`. */
  event?: 'put' | 'mkfile';
  /**
   * A condition on the entry the upload replaces (S3 `If-Match` / `If-None-Match`), checked in the commit
   * transaction (MetaStore `commitPut`): the error it answers is thrown, nothing stored.
   */
  precondition?: PutPrecondition;
  /**
   * The object lock asked for the new version (S3 lock headers and form fields; ports/object-lock.ts), checked by
   * the caller; the store applies it, or the bucket's default retention when absent, in buckets with object lock.
   */
  lock?: ObjectLock;
  /** The door the upload came through (its refusal's record): `kodo` unless the S3 listener's. */
  door?: 'kodo' | 's3' | 'console';
}

/** The committed entry and the request facts the response templates use. */
export interface PutResult {
  record: ObjectRecord;
  /** AccessKey of the upload token (callbacks are signed with its pair). */
  accessKey: string;
  fname: string;
  custom: Record<string, string>;
  persistentId?: string;
}

/** Commits `body` under the policy; see the module comment for the order of checks and their status codes. */
export async function putObject(g: Granary, body: PutBody, req: PutRequest): Promise<PutResult> {
  const { policy } = req;
  const { digests } = body;
  // A sealed blob no entry came to reference is removed; a manifest id is only a name until its commit.
  const dropSealed = (id: string): Promise<void> => (body.manifest ? Promise.resolve() : g.blobs.remove(id));
  const nowMs = g.clock.nowMs();
  let sealedId: string | undefined;
  try {
    checkDeadline(policy, Math.floor(nowMs / 1000));
    // The bucket and the account now; a sub-user's right on the key once the key is known (below).
    const bucket = await authorizeBucket(g, req.accessKey, policy.bucket, { action: ACCOUNT });
    checkSizeLimits(policy, digests.size);
    if (req.crc32 !== undefined && req.crc32 !== digests.crc32) throw Errors.crc32Mismatch();

    const fname = req.fname ?? '';
    const mimeInput = {
      ...(req.clientMime !== undefined ? { clientMime: req.clientMime } : {}),
      fname,
      ...(req.clientKey !== undefined ? { key: req.clientKey } : {}),
      head: digests.head,
    };
    const mimeType = await detectMimeType({ detectMime: policy.detectMime, ...mimeInput });
    // mimeLimit judges the content, not the client's claim (§3.1): always the sniffed type.
    if (policy.mimeLimit) {
      const sniffed = policy.detectMime === 1 ? mimeType : await detectMimeType({ detectMime: 1, ...mimeInput });
      checkMimeLimit(policy.mimeLimit, sniffed);
    }

    const resolved = resolveKey(policy, req.clientKey, {
      bucket: policy.bucket,
      fname,
      ...(policy.endUser !== undefined ? { endUser: policy.endUser } : {}),
      custom: req.custom,
      putTimeMs: nowMs,
      etag: digests.etag,
      fsize: digests.size,
      mimeType,
    });
    const key = resolved ?? digests.etag;
    checkKeyAllowed(policy, key);
    // A sub-user's upload (its key signed the token): its policies must allow the action on the key (an
    // overwrite included: Kodo's `kodo/Upload` covers both). Checked before any byte is committed, on the bucket
    // record read above (no second read).
    authorizeRecord(g, req.accessKey, bucket, { action: req.event === 'mkfile' ? 'kodo/Mkfile' : 'kodo/Upload', key, ...(req.reqId !== undefined ? { requestId: req.reqId } : {}), door: req.door ?? 'kodo' });
    // persistentOps or a workflow template are checked before the commit: bad commands, an unknown template or
    // pipeline → 400, nothing stored.
    const job = await uploadJob(g, req.accessKey, policy);

    sealedId = await body.staged.seal();
    const record: ObjectRecord = {
      bucket: policy.bucket,
      key,
      blobId: sealedId,
      fsize: digests.size,
      hash: digests.etag,
      md5: digests.md5 ?? '',
      mimeType,
      putTime: BigInt(nowMs) * 10000n,
      type: policy.fileType,
      status: 0,
      meta: withDefaultEncryption(bucket.settings, req.meta),
    };
    if (policy.endUser !== undefined) record.endUser = policy.endUser;
    if (req.parts !== undefined) record.parts = req.parts;
    if (req.lock !== undefined) record.lock = req.lock;
    if (policy.deleteAfterDays !== undefined && policy.deleteAfterDays > 0) {
      record.expireAt = expiryFromDays(nowMs, policy.deleteAfterDays);
    }

    const events = await eventsFor(g, {
      event: req.event ?? 'put',
      at: { bucket, key },
      actor: { accessKey: req.accessKey, ...(req.reqId ? { reqId: req.reqId } : {}) },
    });
    const outcome = await g.meta.commitPut(record, {
      insertOnly: insertSemantics(policy),
      nowSec: nowSeconds(g.clock),
      sums: digests.sums,
      events,
      ...(body.staged.inline ? { inline: g.blobs.sealInline?.(body.staged.inline) ?? body.staged.inline } : {}),
      ...(body.manifest ? { manifest: { id: sealedId, pieces: body.manifest.pieces, claim: body.manifest.claim } } : {}),
      ...(req.precondition ? { precondition: req.precondition } : {}),
    });
    await releaseBlobs(g, outcome.freedBlobs);
    if (outcome.result === 'no-bucket') throw Errors.noSuchBucket(policy.bucket);
    if (outcome.result === 'exists') throw Errors.fileExists();
    if (outcome.result === 'refused') throw outcome.error;
    if (outcome.result === 'over-quota') throw quotaExceeded(policy.bucket, outcome.refusal);
    if (outcome.result === 'session-lost') throw body.manifest?.lost(outcome.reason) ?? Errors.badRequest('the upload session is gone');
    let committed = record;
    // A versioned bucket gave the entry its version (ports/versions.ts).
    if ((outcome.result === 'created' || outcome.result === 'replaced') && outcome.versionId !== undefined) {
      committed = { ...record, versionId: outcome.versionId };
    }
    if (outcome.result === 'identical') {
      // Same content already stored: the upload succeeds and the new copy is dropped.
      await dropSealed(sealedId);
      committed = outcome.existing;
    }
    sealedId = undefined;

    const result: PutResult = { record: committed, accessKey: req.accessKey, fname, custom: req.custom };
    if (job) result.persistentId = await enqueueUploadJob(g, req.accessKey, job, committed, req.reqId ?? '');
    return result;
  } catch (err) {
    if (sealedId !== undefined) await dropSealed(sealedId).catch(() => undefined);
    else await body.staged.discard();
    throw err;
  }
}
