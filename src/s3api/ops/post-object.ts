/**
 * POST Object (`POST /<bucket>` with `multipart/form-data`): the browser form upload of S3
 * (docs/development/kodo-protocol.md §18.9). The form is read with busboy: every field before `file` is collected
 * (at most 20 KiB together: MaxPostPreDataLengthExceeded), the policy signature and conditions checked
 * (post-policy.ts), then the file streams through the one upload path (objects/receive.ts → putObject) under a
 * put policy of exactly `<bucket>:<key>`; `${filename}` in `key` is the file's name. Fields after the file are
 * ignored, as S3 does.
 *
 * - Fields kept: Content-Type, `x-amz-meta-*`, Cache-Control, Content-Disposition, Content-Encoding, Expires
 *   (object-headers.ts), `x-amz-storage-class`, `tagging` (a `<Tagging>` document: the object's tags).
 * - `x-amz-checksum-crc32|crc32c|sha1|sha256` checks the file (BadDigest when malformed or not matching); the
 *   checksum is verified, not kept.
 * - A part is a field or the file by its name only (`file` is the file), whatever its headers: Python's
 *   `requests` sends every field with a `filename`.
 * - A form without policy or signature fields is anonymous: allowed into a bucket whose ACL gives AllUsers WRITE
 *   (public-read-write; the upload acts as the bucket's owner, no policy to meet), else AccessDenied; a signed form
 *   missing a signing field or the policy → InvalidArgument (400).
 * - `acl` (a canned ACL) → the object's own ACL (bucket-acl.ts; checked against the policy like any field).
 * - `content-length-range` bounds the file: over → EntityTooLarge, under → EntityTooSmall (nothing committed).
 * - Answer: `success_action_redirect` (or `redirect`) → 303 to it with `bucket`, `key`, `etag` added to its query;
 *   else `success_action_status` 200 or 204 (default) with no body, or 201 with
 *   `<PostResponse><Location/><Bucket/><Key/><ETag/></PostResponse>`. ETag and Location headers on each.
 * Errors: MalformedPOSTRequest (not a form, no file), InvalidArgument (no key), AccessDenied (policy), the
 * signature errors, NoSuchBucket.
 */
import { askedLock, lockFieldsOfHeaders } from '../object-lock.js';
import { withCustomerKey } from '../../ports/customer-key.js';
import { keyMd5Of, SSE_META, sseHeaders, sseMetaValue, writeSse } from '../sse.js';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { ACCOUNT, authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { putObject as commitPut } from '../../objects/put-object.js';
import { receiveBody } from '../../objects/receive.js';
import { bucketName, checkBucketAccess } from '../access.js';
import { cannedGrants, isCannedAcl } from '../acl.js';
import { ACL_META, encodeObjectAcl } from '../acl-request.js';
import { checkAclsEnabled } from './bucket-acl.js';
import { refusePublicAcl } from '../public-access-block.js';
import { CHECKSUM_ALGORITHMS, checkChecksumForm, ContentCheckStream } from '../checksum.js';
import { S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import { etagOf, metaFromHeaders, typeOfStorageClass } from '../object-headers.js';
import { writtenVersionHeader } from '../versions.js';
import { checkPolicy, isSignedForm, parsePolicy, verifyPolicySignature } from '../post-policy.js';
import { encodeTags, tagsOfXml, TAGGING_META } from '../tagging.js';
import type { S3Request, S3Response } from '../types.js';
import { el, parseXml, xmlDocument } from '../xml.js';
import { s3PutPolicy } from './put-object.js';

/** Most bytes of the fields before the file. */
const MAX_FIELD_BYTES = 20 * 1024;

/** Most parts before the file. */
const MAX_FIELDS = 100;

/**
 * The form's fields before the file and the file stream (its name); rejects on a malformed form.
 *
 * The part named `file` (any case) is the file whatever its headers; every other part is a field whatever its
 * headers — Python's `requests.post(url, files=…)` sends each field as a part with a `filename`, which busboy
 * reports as a file: such a part is read (bounded like any field) and kept as a field. Names compare
 * case-insensitively (kept lower-case); the parts after the file are not read.
 */
function readForm(req: S3Request): Promise<{ fields: Map<string, string>; file: Readable; filename: string }> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS, files: MAX_FIELDS } });
    } catch {
      reject(S3Errors.MalformedPOSTRequest());
      return;
    }
    const fields = new Map<string, string>();
    /** Fields sent as file parts, still being read (busboy may announce the next part before their end). */
    const pending: Promise<void>[] = [];
    let bytes = 0;
    let settled = false;
    const fail = (err: Error): void => {
      if (!settled) {
        settled = true;
        reject(err);
      }
    };
    /** Counts a field's bytes against the limit; false (and the form refused) past it. */
    const count = (n: number): boolean => {
      bytes += n;
      if (bytes <= MAX_FIELD_BYTES) return true;
      fail(S3Errors.MaxPostPreDataLengthExceeded());
      return false;
    };
    bb.on('field', (name, value) => {
      if (settled || !count(name.length + value.length)) return;
      fields.set(name.toLowerCase(), value);
    });
    bb.on('file', (name, stream, info) => {
      if (settled) {
        stream.resume();
        return;
      }
      if (name.toLowerCase() !== 'file') {
        const chunks: Buffer[] = [];
        if (!count(name.length)) return void stream.resume();
        pending.push(new Promise<void>((done) => {
          stream.on('data', (chunk: Buffer) => {
            if (count(chunk.length)) chunks.push(chunk);
          });
          stream.on('end', () => {
            fields.set(name.toLowerCase(), Buffer.concat(chunks).toString('utf8'));
            done();
          });
        }));
        return;
      }
      settled = true;
      // Whatever happens next (a refusal before the file is read, the client hanging up), an error of the file
      // stream must never go unheard: busboy fails it with "Unexpected end of form" when the request ends early.
      // Readers attach their own listener (pipeline, checkedFile).
      stream.on('error', () => undefined);
      stream.pause();
      void Promise.all(pending).then(() => resolve({ fields, file: stream, filename: info.filename ?? '' }));
    });
    bb.on('error', () => fail(S3Errors.MalformedPOSTRequest()));
    bb.on('close', () => fail(S3Errors.InvalidArgument('POST requires exactly one file upload per request.')));
    req.body().pipe(bb);
  });
}

/**
 * The file checked against an `x-amz-checksum-<algorithm>` field when the form has one (checksum.ts: BadDigest for
 * a malformed value, and at the end on a mismatch, before anything is committed); the file otherwise.
 */
function checkedFile(file: Readable, fields: Map<string, string>): Readable {
  const algorithm = CHECKSUM_ALGORITHMS.find((a) => fields.has(`x-amz-checksum-${a}`));
  if (algorithm === undefined) return file;
  const expected = fields.get(`x-amz-checksum-${algorithm}`)!.trim();
  checkChecksumForm(algorithm, expected);
  const check = new ContentCheckStream({ checksum: { algorithm, expected: () => expected } });
  file.on('error', (err) => check.destroy(err));
  return file.pipe(check);
}

/** The `success_action_redirect` URL with bucket, key and etag added; undefined when it is not an http(s) URL. */
function redirectTo(target: string, bucket: string, key: string, etag: string): string | undefined {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  url.searchParams.set('bucket', bucket);
  url.searchParams.set('key', key);
  url.searchParams.set('etag', etag);
  return url.toString();
}

export async function postObject(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = bucketName(req);
  const contentType = headerOf(req, 'content-type') ?? '';
  if (!/^multipart\/form-data/i.test(contentType)) throw S3Errors.MalformedPOSTRequest();
  const { fields, file, filename } = await readForm(req);
  try {
    fields.set('bucket', bucket);
    const signed = isSignedForm(fields);
    // Unsigned: an anonymous form, which the bucket's ACL must let write (AllUsers WRITE: public-read-write); the
    // upload then acts as the bucket's owner and has no policy to meet.
    const anonBucket = signed ? undefined : checkBucketAccess(g, req, await g.meta.getBucket(bucket), 'WRITE');
    const accessKey = anonBucket ? anonBucket.owner : verifyPolicySignature(fields, g.secretOf, g.config.region);
    const rawKey = fields.get('key');
    if (rawKey === undefined || rawKey === '') throw S3Errors.InvalidArgument('Bucket POST must contain a field named \'key\'.  If it is specified, please check the order of the fields.');
    // `${filename}` is replaced before the conditions are checked: a `starts-with $key` condition sees the key stored.
    const key = rawKey.split('${filename}').join(filename);
    fields.set('key', key);
    const { min, max } = signed ? checkPolicy(parsePolicy(fields.get('policy') ?? ''), fields, g.clock.nowMs()) : { min: 0, max: Infinity };
    // A form is signed inside its body (no step before it): the account here, the key's s3:PutObject (kodo/Upload)
    // when the upload commits (objects/put-object.ts).
    const bucketRec = anonBucket ?? (await authorizeBucket(g, accessKey, bucket, { action: ACCOUNT }));
    const headers = Object.fromEntries(fields);
    const meta = metaFromHeaders(headers);
    // Form fields `x-amz-server-side-encryption` and `x-amz-server-side-encryption-customer-*` (s3api/sse.ts).
    const sse = writeSse(g, req, headers);
    const sseValue = sseMetaValue(sse);
    if (sseValue) meta[SSE_META] = sseValue;
    const customerKey = sse.kind === 'C' ? sse.key : undefined;
    const tagging = fields.get('tagging');
    if (tagging !== undefined && tagging.trim() !== '') meta[TAGGING_META] = encodeTags(tagsOfXml(parseXml(tagging)));
    const acl = fields.get('acl')?.trim();
    if (acl !== undefined && acl !== '') {
      if (!isCannedAcl(acl)) throw S3Errors.InvalidArgument(`unknown canned ACL ${JSON.stringify(acl)}`);
      const grants = cannedGrants(acl, accessKey, bucketRec.owner);
      checkAclsEnabled(bucketRec, grants, acl);
      refusePublicAcl(bucketRec.settings.publicAccessBlock, grants);
      if (bucketRec.settings.ownership !== 'BucketOwnerEnforced') meta[ACL_META] = encodeObjectAcl({ owner: accessKey, grants });
    }
    // Form fields `x-amz-object-lock-mode`, `-retain-until-date`, `-legal-hold` (object-lock.ts).
    const lock = askedLock(bucketRec, lockFieldsOfHeaders(headers), g.clock.nowMs());
    const mime = fields.get('content-type');
    const fileType = typeOfStorageClass(fields.get('x-amz-storage-class'));
    const maxBytes = Math.min(max, g.config.maxObjectBytes);
    let body;
    try {
      body = await withCustomerKey(customerKey, () => receiveBody(g, checkedFile(file, fields), { maxBytes, inlineMax: g.config.inlineMaxBytes }));
    } catch (err) {
      if ((err as { kind?: string }).kind === 'objectTooLarge') throw S3Errors.EntityTooLarge();
      throw err;
    }
    if (body.digests.size < min) {
      await body.staged.discard();
      throw S3Errors.EntityTooSmall();
    }
    const result = await withCustomerKey(customerKey, () => commitPut(g, body, {
      policy: s3PutPolicy(g, bucket, key, { insertOnly: false, fileType, trustMime: !!mime }),
      accessKey,
      door: 's3',
      clientKey: key,
      ...(mime ? { clientMime: mime } : {}),
      ...(filename ? { fname: filename } : {}),
      custom: {},
      meta,
      reqId: req.reqId,
      ...(lock ? { lock } : {}),
    }));
    g.metrics?.upload('s3', result.record.fsize);
    const etag = etagOf(result.record);
    const version = writtenVersionHeader(result.record);
    const encryption = sseHeaders(result.record.meta[SSE_META], keyMd5Of(sse));
    const host = req.headers.host ?? 'localhost';
    const location = `http://${host}/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
    const redirect = fields.get('success_action_redirect') ?? fields.get('redirect');
    const to = redirect ? redirectTo(redirect, bucket, key, etag) : undefined;
    if (to) return { status: 303, headers: { location: to, etag, ...version, ...encryption } };
    const status = fields.get('success_action_status');
    if (status === '201') {
      const inner = el('Location', location) + el('Bucket', bucket) + el('Key', key) + el('ETag', etag);
      return { status: 201, headers: { 'content-type': 'application/xml', etag, location, ...version, ...encryption }, body: xmlDocument('PostResponse', inner) };
    }
    return { status: status === '200' ? 200 : 204, headers: { etag, location, ...version, ...encryption } };
  } finally {
    file.resume();
  }
}
