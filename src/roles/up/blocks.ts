/**
 * Resumable upload v1 routes (docs/development/kodo-protocol.md §5): `POST /mkblk/<blockSize>`, `POST /bput/<ctx>/<nextChunkOffset>`,
 * `POST /mkfile/<fileSize>[/<name>/<urlsafe b64 value>]…` with name/value pairs `key`, `fname`, `mimeType`,
 * `x:<var>`, `x-qn-meta-<name>` in any order, and the comma-joined ctxs as body (text/plain or octet-stream).
 * UpToken on every call. Answers exactly 200 with the block JSON (mkblk, bput) or the upload answer (mkfile).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import type { PutRequest } from '../../objects/put-object.js';
import { makeBlock, makeFile, putChunk, type ChunkSender } from '../../objects/resumable/blocks.js';
import { answerUpload } from '../../objects/upload-response.js';
import { decodeParam, pathSegments } from '../../objects/manage/encoded-entry.js';
import { bodyBuffer, declaredLength, rawUrlOf, sendJson } from '../../http/wire.js';
import { requireUpToken, sendUploadAnswer } from './uptoken.js';

/** Largest mkfile body (the ctx list), bytes. */
const MAX_CTX_LIST_BYTES = 4 * 1024 * 1024;

function intParam(text: string | undefined, what: string): number {
  if (text === undefined || !/^\d+$/.test(text)) throw Errors.badRequest(`${what} must be a non-negative integer`);
  return Number(text);
}

/**
 * The mkfile body: buffered by a parser (text/plain) or read here from the stream (octet-stream). 413 past
 * MAX_CTX_LIST_BYTES; a larger declared Content-Length is refused before any byte is read.
 */
async function ctxListOf(request: FastifyRequest): Promise<string> {
  const buffered = bodyBuffer(request);
  if (buffered) return buffered.toString('utf8');
  const declared = declaredLength(request);
  if (declared !== undefined && declared > MAX_CTX_LIST_BYTES) {
    throw Errors.bodyTooLarge(`Content-Length ${declared} exceeds the ${MAX_CTX_LIST_BYTES}-byte limit of a ctx list`);
  }
  let size = 0;
  const parts: Buffer[] = [];
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > MAX_CTX_LIST_BYTES) throw Errors.bodyTooLarge();
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** The sender of a chunk: the upload token's key and scope bucket, and the declared body size. */
function chunkSender(g: Granary, request: FastifyRequest): ChunkSender {
  const { accessKey, policy } = requireUpToken(g, request);
  const declaredBytes = declaredLength(request);
  return { accessKey, bucket: policy.bucket, ...(declaredBytes !== undefined ? { declaredBytes } : {}) };
}

/** Applies the mkfile path pairs to a put request (lenient: unknown names are ignored). */
function applyMkfileParams(req: PutRequest, segments: string[]): void {
  for (let i = 0; i + 1 < segments.length; i += 2) {
    const name = segments[i] as string;
    const value = decodeParam(segments[i + 1], name);
    if (name === 'key') req.clientKey = value;
    else if (name === 'fname') req.fname = value;
    else if (name === 'mimeType') req.clientMime = value;
    else if (name.startsWith('x:')) req.custom[name] = value;
    else if (name.toLowerCase().startsWith('x-qn-meta-')) req.meta[name.slice('x-qn-meta-'.length)] = value;
  }
}

type Call = RouteCall<Granary, unknown>;

/** `POST /mkblk/:blockSize`: route table: upload token in the Authorization header. */
export async function mkblk(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const sender = chunkSender(g, request);
  const size = intParam((request.params as { blockSize?: string }).blockSize, 'blockSize');
  return sendJson(reply, 200, await makeBlock(g, sender, size, request.raw));
}

/** `POST /bput/:ctx/:offset`. */
export async function bput(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const sender = chunkSender(g, request);
  const p = request.params as { ctx?: string; offset?: string };
  const offset = intParam(p.offset, 'nextChunkOffset');
  return sendJson(reply, 200, await putChunk(g, sender, p.ctx ?? '', offset, request.raw));
}

/** `POST /mkfile/*`. */
export async function mkfile(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey, policy } = requireUpToken(g, request);
  const segments = pathSegments(rawUrlOf(request)).slice(1);
  const fileSize = intParam(segments[0], 'fileSize');
  const req: PutRequest = { policy, accessKey, custom: {}, meta: {}, reqId: request.id };
  applyMkfileParams(req, segments.slice(1));
  const result = await makeFile(g, fileSize, await ctxListOf(request), req);
  return sendUploadAnswer(reply, await answerUpload(g, policy, result));
}
