/**
 * Form upload: `POST /` with a multipart body (docs/development/kodo-protocol.md §4).
 *
 * Fields arrive in any order (Node sends `crc32` after the file, qiniu-js sends the file first), so the file is
 * streamed into a staged blob as it comes and everything is validated once the body has ended. When the token
 * arrives before the file and is invalid, the file is drained without being stored. Memory stays bounded: only
 * fields (≤ 1 MiB each) are buffered.
 */
import busboy from 'busboy';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { verifyUploadToken, type UploadToken } from '../../auth/upload-token.js';
import type { Granary } from '../../context.js';
import { Errors, KodoError, storageError } from '../../errors.js';
import { putObject, type PutRequest } from '../../objects/put-object.js';
import { receiveBody, type ReceivedBody } from '../../objects/receive.js';
import { answerUpload } from '../../objects/upload-response.js';
import { parsePutPolicy, type PutPolicy } from '../../policy/put-policy.js';
import { declaredLength } from '../../http/wire.js';
import { sendUploadAnswer } from './uptoken.js';

/** Largest text field, bytes (a `file` part taken for a field may be up to GRANARY_MAX_BODY_SIZE). */
const MAX_FIELD_BYTES = 1024 * 1024;

interface ParsedForm {
  fields: Map<string, string>;
  file?: { body: ReceivedBody; filename: string | undefined; mimeType: string };
  /** The token field as verified before the file arrived (the Node SDK's order), so it is not verified twice. */
  verified?: VerifiedToken;
}

/** A token field's text, its verification and its parsed put policy. */
interface VerifiedToken {
  text: string;
  token: UploadToken;
  policy: PutPolicy;
}

/** Verifies the token text and parses its put policy (401 / 400 as `verifyUploadToken` and `parsePutPolicy`). */
function verifyToken(g: Granary, text: string | undefined): VerifiedToken {
  const token = verifyUploadToken(text, g.secretOf);
  return { text: text ?? '', token, policy: parsePutPolicy(token.policy) };
}

/** Undoes the Node SDK's escaping of `"`, CR and LF in multipart file names (docs/development/kodo-protocol.md §4.1). */
function unescapeFilename(name: string | undefined): string | undefined {
  return name?.replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n');
}

/**
 * The bytes of a field value busboy decoded: latin1 (the default charset set below) maps back byte for byte; a
 * part that declared its own charset (`charset=utf-8`) was decoded with it, seen by a character above U+00FF.
 */
function rawFieldBytes(value: string): Buffer {
  // eslint-disable-next-line no-control-regex
  return /[^\u0000-\u00ff]/.test(value) ? Buffer.from(value, 'utf8') : Buffer.from(value, 'latin1');
}

/** Lets a stream nobody reads flow to nowhere; its errors (a cut-off part) are expected and ignored. */
function drain(stream: Readable): void {
  stream.on('error', () => undefined);
  stream.resume();
}

/**
 * Parses the multipart body; the file part is staged on disk. Rejects with 400 on a malformed body, with the
 * storage error (599) when staging fails, with 413 past GRANARY_MAX_OBJECT_SIZE.
 *
 * Every stream busboy hands out gets an error listener before anything else happens (a body cut off inside a
 * part fails that part's stream). When staging the file fails, parsing stops at once: busboy would otherwise
 * wait forever for the destroyed file stream to drain.
 */
function parseForm(g: Granary, request: FastifyRequest): Promise<ParsedForm> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: request.headers,
        // A `file` part busboy takes for a field is buffered up to GRANARY_MAX_BODY_SIZE (16 MiB by default).
        limits: { files: 1, fields: 1000, parts: 1100, fieldSize: g.config.maxBodyBytes },
        defParamCharset: 'utf8',
        // Field values are decoded as latin1 so their bytes are recovered exactly (rawFieldBytes): text fields are
        // then read as UTF-8, a `file` part taken for a field keeps its binary content.
        defCharset: 'latin1',
      });
    } catch (err) {
      reject(Errors.badMultipart((err as Error).message));
      return;
    }
    const fields = new Map<string, string>();
    let filePromise: Promise<ParsedForm['file']> | undefined;
    let verified: VerifiedToken | undefined;
    let failure: unknown;
    let fieldBytes = 0;
    const fail = (err: unknown): void => {
      if (failure) return;
      const storage = err instanceof KodoError ? undefined : storageError(err, 'staging the upload');
      if (storage) request.log.error({ err }, storage.message); // the original names the path; the client never sees it
      failure = err instanceof KodoError ? err : (storage ?? Errors.badMultipart((err as Error).message));
    };
    /** Stops reading the body (the answer goes out now; the connection closes after it). */
    const stop = (err: unknown): void => {
      fail(err);
      request.raw.unpipe(bb);
      bb.destroy();
      finish();
    };

    /**
     * Stages the file part: checks a token sent before it first (the Node SDK's order: a bad one means the bytes
     * are drained, never stored, and its trafficLimit throttles the upload).
     */
    const acceptFile = (stream: Readable, filename: string | undefined, mimeType: string): void => {
      const token = fields.get('token');
      let bitsPerSecond: number | undefined;
      if (token !== undefined) {
        try {
          verified = verifyToken(g, token);
          bitsPerSecond = verified.policy.trafficLimit;
        } catch (err) {
          fail(err);
        }
      }
      if (failure) {
        drain(stream);
        return;
      }
      const expectedBytes = declaredLength(request);
      const limits = {
        maxBytes: g.config.maxObjectBytes,
        inlineMax: g.config.inlineMaxBytes,
        ...(bitsPerSecond ? { bitsPerSecond } : {}),
        ...(expectedBytes !== undefined ? { expectedBytes } : {}),
      };
      filePromise = receiveBody(g, stream, limits).then((body) => ({ body, filename, mimeType }));
      filePromise.catch(stop);
    };

    bb.on('field', (name, value, info) => {
      if (info.valueTruncated || info.nameTruncated) fail(Errors.badMultipart(`field ${name} is too large`));
      fieldBytes += name.length + value.length;
      if (fieldBytes > g.config.maxBodyBytes) stop(Errors.bodyTooLarge('the form fields exceed GRANARY_MAX_BODY_SIZE'));
      const bytes = rawFieldBytes(value);
      // busboy hands a part without a filename (or with filename="") to this handler unless its type is
      // application/octet-stream: the part named `file` is the file whatever its filename and type (PHP's in-memory
      // put sends filename="" and text/plain); its fname is then empty, as on Kodo.
      if (name === 'file' && !filePromise && !failure) {
        acceptFile(Readable.from([bytes]), '', info.mimeType);
        return;
      }
      if (bytes.length > MAX_FIELD_BYTES) fail(Errors.badMultipart(`field ${name} is too large`));
      fields.set(name, bytes.toString('utf8'));
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || filePromise) {
        drain(stream);
        return;
      }
      acceptFile(stream, unescapeFilename(info.filename), info.mimeType);
    });
    bb.on('error', (err) => {
      fail(err);
      finish();
    });
    bb.on('close', () => finish());
    // A client that goes away mid-body: fail busboy, which fails the file stream, which discards the staging.
    request.raw.on('close', () => {
      if (!request.raw.complete) bb.destroy(Errors.badMultipart('request aborted'));
    });

    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      void (async () => {
        const file = filePromise ? await filePromise.catch(() => undefined) : undefined;
        if (failure) {
          await file?.body.staged.discard();
          reject(failure);
          return;
        }
        const form: ParsedForm = file ? { fields, file } : { fields };
        if (verified) form.verified = verified;
        resolve(form);
      })();
    };
    request.raw.pipe(bb);
  });
}

/** Parses the `crc32` field: a decimal unsigned 32-bit integer, else 400. */
function parseCrc32(text: string | undefined): number | undefined {
  if (text === undefined || text === '') return undefined;
  if (!/^\d{1,10}$/.test(text) || Number(text) > 0xffffffff) throw Errors.badCrc32(text);
  return Number(text);
}

/** Handles `POST /`. */
export async function formUpload(g: Granary, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const ct = String(request.headers['content-type'] ?? '');
  if (!ct.toLowerCase().startsWith('multipart/form-data')) throw Errors.badMultipart('expected multipart/form-data');
  // A declared size past the object limit plus the room fields may take is refused before any byte is read.
  const declared = declaredLength(request);
  if (declared !== undefined && declared > g.config.maxObjectBytes + g.config.maxBodyBytes) {
    throw Errors.objectTooLarge(`Content-Length ${declared} exceeds GRANARY_MAX_OBJECT_SIZE ${g.config.maxObjectBytes}`);
  }
  const form = await parseForm(g, request);
  const { fields, file } = form;
  try {
    // A token field sent again after the file (a later field of the same name wins) is verified again.
    const text = fields.get('token');
    const early = form.verified;
    const { token, policy } = early !== undefined && early.text === text ? early : verifyToken(g, text);
    if (!file) throw Errors.noFilePart();
    const req: PutRequest = { policy, accessKey: token.accessKey, custom: {}, meta: {}, reqId: request.id };
    const key = fields.get('key');
    if (key !== undefined) req.clientKey = key;
    const fname = fields.get('fname') ?? file.filename;
    if (fname !== undefined) req.fname = fname;
    req.clientMime = file.mimeType;
    const crc = parseCrc32(fields.get('crc32'));
    if (crc !== undefined) req.crc32 = crc;
    for (const [name, value] of fields) {
      if (name.startsWith('x:')) req.custom[name] = value;
      else if (name.toLowerCase().startsWith('x-qn-meta-')) req.meta[name.slice('x-qn-meta-'.length)] = value;
    }
    const result = await putObject(g, file.body, req);
    g.metrics?.upload('form', result.record.fsize);
    const answer = await answerUpload(g, policy, result);
    const accept = fields.get('accept');
    if (accept && answer.status === 200) {
      // Legacy `accept` field (docs/development/kodo-protocol.md §4.1): the answer's Content-Type is the value given.
      return reply.code(200).header('cache-control', 'no-store').type(accept).send(answer.body);
    }
    return sendUploadAnswer(reply, answer);
  } catch (err) {
    await file?.body.staged.discard();
    throw err;
  }
}
