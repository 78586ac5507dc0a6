/**
 * Base64 upload (Kodo's `putb64`, used by mobile and browser apps for canvas images and by the Go SDK's
 * Base64Uploader): `POST /putb64/<fsize>[/key/<b64>][/mimeType/<b64>][/crc32/<decimal>][/fname/<b64>]
 * [/x:<var>/<b64>]…[/x-qn-meta-<name>/<b64>]…` with `Authorization: UpToken <token>` and the file as base64 text
 * in the body (standard or URL-safe alphabet, padding optional, line breaks ignored; any Content-Type: the Go SDK
 * sends application/octet-stream).
 *
 * `fsize` is the decoded size in bytes, or `-1` when the client does not know it (Kodo's documentation: the
 * decoded body's size is then taken); a known size that differs from the decoded body → 400. The bytes go through
 * the one putObject path with the whole put policy (deadline, scope, insertOnly, fsizeMin/Limit, mimeLimit,
 * saveKey, callbacks, persistentOps, returnBody…), exactly as a form upload: 200 with the upload answer.
 * Errors: 400 bad path/fsize/base64, 401 token, 403/413/614/631 as any upload, 406 crc32 mismatch.
 */
import { pipeline } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { Base64DecodeStream } from '../../objects/base64-stream.js';
import { putObject, type PutRequest } from '../../objects/put-object.js';
import { receiveBody } from '../../objects/receive.js';
import { answerUpload } from '../../objects/upload-response.js';
import { decodeParam, pathSegments } from '../../objects/manage/encoded-entry.js';
import { rawUrlOf } from '../../http/wire.js';
import { requireUpToken, sendUploadAnswer } from './uptoken.js';

/** The `<fsize>` segment: a non-negative decimal, or -1 (unknown); undefined for -1. 400 otherwise. */
function parseFsize(text: string | undefined): number | undefined {
  if (text === '-1') return undefined;
  if (text === undefined || !/^\d{1,16}$/.test(text)) throw Errors.badRequest('fsize must be -1 or a non-negative integer');
  return Number(text);
}

/** Applies the `name/value` pairs after the size (unknown names are ignored, as mkfile does). */
function applyParams(req: PutRequest, segments: string[]): void {
  if (segments.length % 2 !== 0) throw Errors.badRequest(`parameter ${segments[segments.length - 1]} has no value`);
  for (let i = 0; i < segments.length; i += 2) {
    const name = segments[i] as string;
    const raw = segments[i + 1] as string;
    if (name === 'crc32') {
      if (!/^\d{1,10}$/.test(raw) || Number(raw) > 0xffffffff) throw Errors.badCrc32(raw);
      req.crc32 = Number(raw);
    } else if (name === 'key') req.clientKey = decodeParam(raw, 'key');
    else if (name === 'mimeType') req.clientMime = decodeParam(raw, 'mimeType');
    else if (name === 'fname') req.fname = decodeParam(raw, 'fname');
    else if (name.startsWith('x:')) req.custom[name] = decodeParam(raw, name);
    else if (name.toLowerCase().startsWith('x-qn-meta-')) req.meta[name.slice('x-qn-meta-'.length)] = decodeParam(raw, name);
  }
}

/** Handles `POST /putb64/…`. */
export async function putb64(g: Granary, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { accessKey, policy } = requireUpToken(g, request);
  const segments = pathSegments(rawUrlOf(request)).slice(1);
  const fsize = parseFsize(segments[0]);
  const req: PutRequest = { policy, accessKey, custom: {}, meta: {}, reqId: request.id };
  applyParams(req, segments.slice(1));
  if (fsize !== undefined && fsize > g.config.maxObjectBytes) {
    throw Errors.objectTooLarge(`fsize ${fsize} exceeds GRANARY_MAX_OBJECT_SIZE ${g.config.maxObjectBytes}`);
  }
  const decoded = pipeline(request.raw, new Base64DecodeStream(), () => undefined);
  const body = await receiveBody(g, decoded, {
    maxBytes: g.config.maxObjectBytes,
    inlineMax: g.config.inlineMaxBytes,
    ...(policy.trafficLimit ? { bitsPerSecond: policy.trafficLimit } : {}),
    ...(fsize !== undefined ? { expectedBytes: fsize } : {}),
  });
  if (fsize !== undefined && body.digests.size !== fsize) {
    await body.staged.discard();
    throw Errors.badRequest(`fsize ${fsize} does not match the decoded body (${body.digests.size} bytes)`);
  }
  const result = await putObject(g, body, req);
  g.metrics?.upload('putb64', result.record.fsize);
  return sendUploadAnswer(reply, await answerUpload(g, policy, result));
}
