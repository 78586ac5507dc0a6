/**
 * The up role's routes (docs/development/kodo-protocol.md §3–§6): form upload, resumable v1 (mkblk, bput, mkfile),
 * putb64 and resumable v2 (multipart). Every one carries an upload token, verified by the upload path itself
 * (roles/up/uptoken.ts; the form's token is a field of the streamed body); the bucket is the token's scope,
 * authorised by `putObject` / the resumable domain functions. Chunk, part and putb64 bodies always stream (`stream`).
 */
import type { Caller } from '../auth/management.js';
import type { Granary } from '../context.js';
import { bput, mkblk, mkfile } from '../roles/up/blocks.js';
import { formUpload } from '../roles/up/form.js';
import { abortMultipart, completeMultipart, initiateMultipart, listParts, uploadPartRoute } from '../roles/up/parts.js';
import { putb64 } from '../roles/up/putb64.js';
import type { RouteEntry, RouteIam } from './types.js';

const scope = (by: string) => ({ from: 'domain', where: 'upload token scope', by }) as const;
/** Upload token routes: the action is checked on the token's scope when the upload commits (or starts). */
const UPLOAD: RouteIam = { action: 'kodo/Upload', resource: 'object' };
const PIECES: RouteIam = { action: 'kodo/Mkfile', resource: 'object' };
const V2 = '/buckets/:bucket/objects/:objectName/uploads';

export const UP_ROUTES: RouteEntry<Granary, Caller>[] = [
  { method: 'POST', url: '/', role: 'up', operation: 'up.form', auth: 'uploadToken', bucket: scope('putObject'), iam: UPLOAD, group: 'main', handler: (call, request, reply) => formUpload(call.g, request, reply) },
  { method: 'POST', url: '/mkblk/:blockSize', role: 'up', operation: 'up.mkblk', auth: 'uploadToken', bucket: scope('makeBlock'), iam: PIECES, group: 'stream', handler: mkblk },
  { method: 'POST', url: '/bput/:ctx/:offset', role: 'up', operation: 'up.bput', auth: 'uploadToken', bucket: scope('putChunk'), iam: PIECES, group: 'stream', handler: bput },
  { method: 'POST', url: '/mkfile/*', role: 'up', operation: 'up.mkfile', auth: 'uploadToken', bucket: scope('putObject'), iam: PIECES, group: 'stream', handler: mkfile },
  { method: 'POST', url: '/putb64/*', role: 'up', operation: 'up.putb64', auth: 'uploadToken', bucket: scope('putObject'), iam: UPLOAD, group: 'stream', handler: (call, request, reply) => putb64(call.g, request, reply) },
  { method: 'POST', url: V2, role: 'up', operation: 'up.multipart.initiate', auth: 'uploadToken', bucket: scope('initiateUpload'), iam: PIECES, group: 'main', handler: initiateMultipart },
  { method: 'PUT', url: `${V2}/:uploadId/:partNumber`, role: 'up', operation: 'up.multipart.part', auth: 'uploadToken', bucket: scope('uploadPart'), iam: PIECES, group: 'stream', handler: uploadPartRoute },
  { method: 'POST', url: `${V2}/:uploadId`, role: 'up', operation: 'up.multipart.complete', auth: 'uploadToken', bucket: scope('putObject'), iam: PIECES, group: 'main', handler: completeMultipart },
  { method: 'DELETE', url: `${V2}/:uploadId`, role: 'up', operation: 'up.multipart.abort', auth: 'uploadToken', bucket: scope('abortUpload'), iam: { action: 'kodo/AbortMultipartUpload', resource: 'object' }, group: 'main', handler: abortMultipart },
  { method: 'GET', url: `${V2}/:uploadId`, role: 'up', operation: 'up.multipart.listParts', auth: 'uploadToken', bucket: scope('listUploadParts'), iam: { action: 'kodo/ListParts', resource: 'object' }, group: 'main', handler: listParts },
];
