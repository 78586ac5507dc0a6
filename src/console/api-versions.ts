/**
 * The object panel's versions (docs/reference/versioning.md), JSON; the session and the bucket checked by the route
 * table (631 / 403), every change made by the object domain functions (src/objects/manage/*):
 * - `GET /api/buckets/:bucket/versions?key=` → `{versioning: 'Enabled'|'Suspended'|null, versions: [{versionId,
 *   size (bytes), putTime (100-ns units; a marker's creation), hash, current, deleteMarker}], more}`: the key's
 *   versions newest first (at most 1000; `more` when it has others), from MetaStore.listVersions (no bucket scan).
 * - `GET /api/buckets/:bucket/versions/download?key=&versionId=` → that version's bytes as an attachment (streamed;
 *   612 no such version or a delete marker, 400 a version encrypted with a customer key, the Kodo download errors
 *   of a disabled or archived one).
 * - `POST /api/buckets/:bucket/versions/restore` `{key, versionId}` → `{versionId}`: copies the version onto its
 *   key as a new current version (S3's restore: the versions in between are kept); 612 no such version.
 * - `POST /api/buckets/:bucket/versions/delete` `{key, versionId}` → 204: deletes that version (or marker) for
 *   good — the only way to destroy bytes in a versioned bucket; 612 no such version.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toJson } from '../bigint-json.js';
import { Errors } from '../errors.js';
import type { RouteCall } from '../http/route-call.js';
import { sendJson } from '../http/wire.js';
import { copyEntry } from '../objects/manage/copy.js';
import { deleteVersion } from '../objects/manage/delete.js';
import { checkDownloadable } from '../objects/read.js';
import { readObject } from '../objects/verified-read.js';
import { isVersionId, wireVersionId } from '../ports/versions.js';
import { SSE_META } from '../s3api/sse.js';
import type { ConsoleApi } from './api-context.js';
import { bodyOf, queryParam, text, type Body } from './body.js';
import type { ConsoleSession } from './sessions.js';

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** Versions of one key listed at most. */
const MAX_VERSIONS = 1000;

/** A version id as given (query or body), 400 when Granary could not have made it. */
function versionIdOf(id: string): string {
  if (!isVersionId(id)) throw Errors.badRequest('invalid version id');
  return id;
}

/** `key` from the query, 400 when empty. */
function keyOf(request: FastifyRequest): string {
  const key = queryParam(request, 'key');
  if (key === '') throw Errors.badRequest('key is required');
  return key;
}

/** `GET /api/buckets/:bucket/versions`. */
export async function listVersionsApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const key = keyOf(request);
  const page = await call.g.meta.listVersions({ bucket: call.bucket.name, prefix: key, delimiter: '', limit: MAX_VERSIONS + 1 });
  const versions = [];
  let more = false;
  for (const e of page.entries) {
    if (e.kind !== 'version' || e.version.record.key !== key) continue;
    if (versions.length === MAX_VERSIONS) {
      more = true;
      break;
    }
    const { record, deleteMarker, isLatest } = e.version;
    versions.push({ versionId: wireVersionId(record), size: deleteMarker ? 0 : record.fsize, putTime: record.putTime, hash: deleteMarker ? '' : record.hash, current: isLatest, deleteMarker });
  }
  return sendJson(reply, 200, toJson({ versioning: call.bucket.settings.versioning ?? null, versions, more }));
}

/** `GET /api/buckets/:bucket/versions/download`. */
export async function downloadVersionApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const key = keyOf(request);
  const v = await g.meta.getVersion(call.bucket.name, key, versionIdOf(queryParam(request, 'versionId')));
  if (!v || v.deleteMarker) throw Errors.noSuchEntry();
  const rec = checkDownloadable(g, v.record);
  if (rec.meta[SSE_META]?.startsWith('C:')) throw Errors.badRequest('this version is encrypted with a customer key (SSE-C): download it through S3 with its key');
  const name = key.slice(key.lastIndexOf('/') + 1) || 'download';
  return reply
    .code(200)
    .header('content-type', rec.mimeType || 'application/octet-stream')
    .header('content-length', String(rec.fsize))
    .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(name)}`)
    .header('x-amz-version-id', wireVersionId(rec))
    .send(readObject(g, rec));
}

/** The `{key, versionId}` of a restore or delete. */
function target(b: Body): { key: string; versionId: string } {
  return { key: text(b, 'key'), versionId: versionIdOf(text(b, 'versionId')) };
}

/** `POST /api/buckets/:bucket/versions/restore`. */
export async function restoreVersionApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { key, versionId } = target(bodyOf(request));
  const ref = { bucket: call.bucket.name, key };
  const out = await copyEntry(call.g, { ...ref, versionId }, ref, true, { accessKey: call.caller.accessKey, reqId: request.id });
  return { versionId: out.versionId ?? 'null' };
}

/** `POST /api/buckets/:bucket/versions/delete`. */
export async function deleteVersionApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { key, versionId } = target(bodyOf(request));
  const out = await deleteVersion(call.g, { bucket: call.bucket.name, key }, versionId, { accessKey: call.caller.accessKey, reqId: request.id });
  if (!out.deleted) throw Errors.noSuchEntry();
  return reply.code(204).send();
}
