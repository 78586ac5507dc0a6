/**
 * Resumable upload v2 routes (docs/development/kodo-protocol.md §6), under `/buckets/<bucket>/objects/<objectName>/uploads`, where
 * `objectName` is the URL-safe base64 of the key (padded), `~` for none, or empty for the key `""`:
 * `POST …/uploads` (initiate), `PUT …/uploads/<id>/<partNumber>` (part; hex `Content-MD5` checked),
 * `POST …/uploads/<id>` (complete, JSON body whatever its Content-Type), `DELETE …/uploads/<id>` (abort), `GET …/uploads/<id>` (list parts,
 * `max-parts`, `part-number-marker` or `part-number_marker`). UpToken on every call; exactly 200 on success.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import type { PutRequest } from '../../objects/put-object.js';
import {
  abortUpload,
  completeUpload,
  initiateUpload,
  listUploadParts,
  uploadPart,
  type CompleteRequest,
  type UploadTarget,
} from '../../objects/resumable/parts.js';
import { answerUpload } from '../../objects/upload-response.js';
import { decodeParam } from '../../objects/manage/encoded-entry.js';
import { bodyBuffer, declaredLength, sendEmpty, sendJson } from '../../http/wire.js';
import { requireUpToken, sendUploadAnswer } from './uptoken.js';

interface Params {
  bucket?: string;
  objectName?: string;
  uploadId?: string;
  partNumber?: string;
}

/**
 * Bucket and key of the URL: `~` names no key; an empty object name (`/objects//uploads`, the Java and Go SDKs'
 * empty key) is the key `""`.
 */
function targetOf(request: FastifyRequest): UploadTarget {
  const p = request.params as Params;
  if (!p.bucket || p.objectName === undefined) throw Errors.badRequest('bucket and object name are required');
  if (p.objectName === '~') return { bucket: p.bucket, key: undefined };
  return { bucket: p.bucket, key: p.objectName === '' ? '' : decodeParam(p.objectName, 'object name') };
}

/** The part number of the URL: plain decimal digits, else NaN (refused with 400; `0x10`, `1e3`, `+5`, `5.0` are not). */
function partNumberOf(request: FastifyRequest): number {
  const text = (request.params as Params).partNumber ?? '';
  return /^\d+$/.test(text) ? Number(text) : Number.NaN;
}

function uploadIdOf(request: FastifyRequest): string {
  const id = (request.params as Params).uploadId;
  if (!id) throw Errors.badRequest('uploadId is required');
  return id;
}

/**
 * The complete body, read as JSON whatever its Content-Type (the Java SDK sends it as application/octet-stream,
 * which no parser buffers: read here, at most GRANARY_MAX_BODY_SIZE bytes, else 413).
 */
async function completeText(g: Granary, request: FastifyRequest): Promise<string> {
  const buffered = bodyBuffer(request);
  if (buffered) return buffered.toString('utf8');
  const limit = g.config.maxBodyBytes;
  const declared = declaredLength(request);
  if (declared !== undefined && declared > limit) throw Errors.bodyTooLarge(`Content-Length ${declared} exceeds GRANARY_MAX_BODY_SIZE`);
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > limit) throw Errors.bodyTooLarge('the part list exceeds GRANARY_MAX_BODY_SIZE');
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts).toString('utf8');
}

/**
 * The complete body: `{"parts":[{partNumber, etag}], fname?, mimeType?, customVars?, metadata?, metaData?}`
 * (`metaData`: the Java SDK's spelling); 400 otherwise
 * (also for an `fname` or `mimeType` that is present but not a string).
 */
function completeBody(raw: string): CompleteRequest {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw Errors.badPartList('the body is not JSON');
  }
  const b = body as Partial<CompleteRequest> | null;
  if (!b || typeof b !== 'object' || !Array.isArray(b.parts)) throw Errors.badPartList('parts must be an array');
  for (const p of b.parts) {
    if (!p || typeof p.partNumber !== 'number' || typeof p.etag !== 'string') {
      throw Errors.badPartList('each part needs a partNumber and an etag');
    }
  }
  for (const field of ['fname', 'mimeType'] as const) {
    if (b[field] !== undefined && b[field] !== null && typeof b[field] !== 'string') throw Errors.badRequest(`${field} must be a string`);
  }
  return b as CompleteRequest;
}

function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (v !== undefined && v !== null) out[k] = String(v);
  }
  return out;
}

type Call = RouteCall<Granary, unknown>;

/** `PUT /buckets/:bucket/objects/:objectName/uploads/:uploadId/:partNumber`: route table: upload token; the body streamed. */
export async function uploadPartRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = requireUpToken(g, request);
  const md5 = request.headers['content-md5'];
  const answer = await uploadPart(
    g,
    accessKey,
    targetOf(request),
    uploadIdOf(request),
    partNumberOf(request),
    typeof md5 === 'string' && md5 !== '' ? md5 : undefined,
    request.raw,
    declaredLength(request),
  );
  return sendJson(reply, 200, answer);
}

/** `POST /buckets/:bucket/objects/:objectName/uploads`. */
export async function initiateMultipart(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey, policy } = requireUpToken(g, request);
  return sendJson(reply, 200, await initiateUpload(g, accessKey, policy, targetOf(request)));
}

/** `POST /buckets/:bucket/objects/:objectName/uploads/:uploadId`. */
export async function completeMultipart(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey, policy } = requireUpToken(g, request);
  const target = targetOf(request);
  const body = completeBody(await completeText(g, request));
  const req: PutRequest = {
    policy,
    accessKey,
    custom: {},
    meta: {},
    reqId: request.id,
    ...(body.fname ? { fname: body.fname } : {}),
    ...(body.mimeType ? { clientMime: body.mimeType } : {}),
  };
  if (target.key !== undefined) req.clientKey = target.key;
  for (const [k, v] of Object.entries(stringMap(body.customVars))) if (k.startsWith('x:')) req.custom[k] = v;
  // `metadata` (Kodo's documented field, the Node and Go SDKs) and `metaData` (the Java SDK's
  // ApiUploadV2CompleteUpload): both are read; where both name the same key, `metadata` wins.
  for (const [k, v] of Object.entries({ ...stringMap(body.metaData), ...stringMap(body.metadata) })) {
    if (k.toLowerCase().startsWith('x-qn-meta-')) req.meta[k.slice('x-qn-meta-'.length)] = v;
  }
  const result = await completeUpload(g, target, uploadIdOf(request), body.parts, req);
  return sendUploadAnswer(reply, await answerUpload(g, policy, result));
}

/** `DELETE /buckets/:bucket/objects/:objectName/uploads/:uploadId`. */
export async function abortMultipart(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = requireUpToken(g, request);
  await abortUpload(g, accessKey, targetOf(request), uploadIdOf(request));
  return sendEmpty(reply);
}

/** `GET /buckets/:bucket/objects/:objectName/uploads/:uploadId`. */
export async function listParts(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = requireUpToken(g, request);
  const q = request.query as Record<string, string | undefined>;
  const max = Math.min(1000, Math.max(1, Number(q['max-parts'] ?? 1000) || 1000));
  const marker = Number(q['part-number-marker'] ?? q['part-number_marker'] ?? 0) || 0;
  return sendJson(reply, 200, await listUploadParts(g, accessKey, targetOf(request), uploadIdOf(request), marker, max));
}
