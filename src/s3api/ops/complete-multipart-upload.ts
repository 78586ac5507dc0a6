/**
 * CompleteMultipartUpload (`POST /<bucket>/<key>?uploadId=<id>`, body
 * `<CompleteMultipartUpload><Part><PartNumber/><ETag/>[<ChecksumCRC32/>…]</Part>…</CompleteMultipartUpload>`):
 * checks the list, then commits through Kodo's v2 complete (objects/resumable/parts.ts `completeUpload`: a
 * manifest of the parts, nothing copied, the upload consumed in the same commit) with the settings of
 * CreateMultipartUpload, so the object is an ordinary entry (docs/development/kodo-protocol.md §18.8).
 *
 * Checks, in S3's order: an empty or malformed list → MalformedXML; part numbers not strictly ascending →
 * InvalidPartOrder; a part not uploaded, or whose ETag (its MD5, quotes optional) or listed checksum differs from
 * the part's → InvalidPart; a part other than the last under 5 MiB → EntityTooSmall. Unknown upload → NoSuchUpload,
 * except a repeat of a complete that succeeded: the object under the key still being the one this upload made
 * (its `@s3-upload`) with the same parts, the same result is answered (AWS and radosgw answer 200; Ceph's
 * s3-tests `test_multipart_upload` completes twice).
 * Checksum (object-checksum.ts): with the algorithm chosen at create, the object's COMPOSITE checksum (the digest
 * of the parts' binary digests, `-<n>`) or FULL_OBJECT CRC (combined from the parts' CRCs, crc-combine.ts); a
 * request header `x-amz-checksum-<algorithm>` must match it (BadDigest otherwise).
 * Conditional: `If-Match` / `If-None-Match` as PutObject (write-conditions.ts), decided in the commit transaction.
 * Answer: `<CompleteMultipartUploadResult><Location/><Bucket/><Key/><ETag/>[<ChecksumSHA256/><ChecksumType/>]
 * </CompleteMultipartUploadResult>`, ETag `"<hex MD5 of the part MD5s>-<n>"`, kept with the entry as `@s3-etag`.
 */
import type { Granary } from '../../context.js';
import { findLiveObject } from '../../objects/read.js';
import { allParts, completeUpload } from '../../objects/resumable/parts.js';
import type { PartRecord } from '../../ports/meta.js';
import { accessBucket, bucketName, objectKey, signedCaller } from '../access.js';
import { CHECKSUM_ALGORITHMS, digestOf, type ChecksumAlgorithm } from '../checksum.js';
import { combineCrc } from '../crc-combine.js';
import { isS3Error, S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import {
  loadSettings,
  MIN_PART_BYTES,
  multipartEtag,
  normalEtag,
  partChecksum,
  s3Upload,
  S3_ETAG_META,
  S3_UPLOAD_META,
  uploadIdOf,
  type UploadSettings,
} from '../multipart.js';
import {
  CHECKSUM_META,
  checksumElement,
  checksumOfEntry,
  encodeChecksum,
  MAX_PART_CHECKSUMS,
  PART_CHECKSUMS_META,
  type ObjectChecksum,
} from '../object-checksum.js';
import { etagOf } from '../object-headers.js';
import { writtenVersionHeader } from '../versions.js';
import { checkReadKey, readKey, SSE_META, sseHeaders } from '../sse.js';
import { withCustomerKey } from '../../ports/customer-key.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlEscape, xmlDocument, type XmlNode } from '../xml.js';
import { checkEarly, writePrecondition } from '../write-conditions.js';
import { s3PutPolicy } from './put-object.js';

/** One part of the request's list: number, ETag, and the checksums it names. */
interface ListedPart {
  partNumber: number;
  etag: string;
  checksums: Partial<Record<ChecksumAlgorithm, string>>;
}

/** The part list of the request body; MalformedXML when it has none or is malformed. */
function partList(doc: Record<string, XmlNode>): ListedPart[] {
  const root = doc.CompleteMultipartUpload;
  if (root === undefined || typeof root === 'string' || Array.isArray(root)) throw S3Errors.MalformedXML();
  const parts = root.Part;
  if (parts === undefined) throw S3Errors.MalformedXML();
  const out: ListedPart[] = [];
  for (const p of Array.isArray(parts) ? parts : [parts]) {
    if (typeof p === 'string' || Array.isArray(p)) throw S3Errors.MalformedXML();
    const n = textOf(p.PartNumber)?.trim();
    const etag = textOf(p.ETag);
    if (n === undefined || !/^\d{1,5}$/.test(n) || etag === undefined) throw S3Errors.MalformedXML();
    const checksums: ListedPart['checksums'] = {};
    for (const a of CHECKSUM_ALGORITHMS) {
      const v = textOf(p[checksumElement(a)])?.trim();
      if (v) checksums[a] = v;
    }
    out.push({ partNumber: Number(n), etag: normalEtag(etag), checksums });
  }
  if (out.length === 0) throw S3Errors.MalformedXML();
  return out;
}

/** The object's checksum from its parts' (see the module comment); InvalidPart when a part has none. */
async function objectChecksum(want: NonNullable<UploadSettings['checksum']>, parts: PartRecord[]): Promise<ObjectChecksum> {
  const digests = parts.map((p) => {
    const v = partChecksum(p, want.algorithm);
    if (v === undefined) throw S3Errors.InvalidPart(`Part ${p.partNumber} has no ${want.algorithm} checksum: upload it again with one.`);
    return Buffer.from(v, 'base64');
  });
  if (want.type === 'COMPOSITE') {
    const value = `${(await digestOf(want.algorithm, Buffer.concat(digests))).toString('base64')}-${parts.length}`;
    return { ...want, value };
  }
  const crc = want.algorithm === 'crc32' || want.algorithm === 'crc32c' || want.algorithm === 'crc64nvme' ? want.algorithm : undefined;
  if (!crc) throw S3Errors.InvalidRequest(`The FULL_OBJECT checksum type cannot be used with the ${want.algorithm} checksum algorithm.`);
  let acc: Buffer = digests[0]!;
  for (let i = 1; i < digests.length; i++) acc = combineCrc(crc, acc, digests[i]!, parts[i]!.size);
  return { ...want, value: acc.toString('base64') };
}

/** Checks the request's `x-amz-checksum-<algorithm>` header against the object's checksum: BadDigest when it differs. */
function checkRequestChecksum(req: S3Request, sum: ObjectChecksum | undefined): void {
  for (const a of CHECKSUM_ALGORITHMS) {
    const sent = headerOf(req, `x-amz-checksum-${a}`)?.trim();
    if (sent === undefined) continue;
    const bare = (v: string): string => v.replace(/-\d+$/, '');
    if (!sum || sum.algorithm !== a || bare(sent) !== bare(sum.value)) {
      throw S3Errors.BadDigest(`The ${a.toUpperCase()} you specified did not match the calculated checksum.`);
    }
  }
}

/** The answer of a completed upload. */
function answer(req: S3Request, bucket: string, key: string, etag: string, sum: ObjectChecksum | undefined, rec: { versionId?: string }, sse: string | undefined): S3Response {
  const host = req.headers.host ?? 'localhost';
  const location = `http://${host}/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
  let inner = el('Location', location) + el('Bucket', bucket) + el('Key', key) + `<ETag>${xmlEscape(etag)}</ETag>`;
  if (sum) inner += el(checksumElement(sum.algorithm), sum.value) + el('ChecksumType', sum.type);
  return xmlResponse(xmlDocument('CompleteMultipartUploadResult', inner), 200, { ...writtenVersionHeader(rec), ...sseHeaders(sse) });
}

/**
 * The answer to a repeated complete of `uploadId` (see the module comment), or undefined when the object under the
 * key is not what that upload made of these parts.
 */
async function repeated(g: Granary, req: S3Request, bucket: string, key: string, uploadId: string): Promise<S3Response | undefined> {
  // Only a caller who may write the bucket learns anything of its objects.
  await accessBucket(g, req);
  const rec = await findLiveObject(g, bucket, key);
  if (!rec || rec.meta[S3_UPLOAD_META] !== uploadId) return undefined;
  let list: ListedPart[];
  try {
    list = partList(parseXml(await readXmlBody(req.body())));
  } catch {
    return undefined;
  }
  const etag = etagOf(rec);
  if (etag !== `"${multipartEtag(list.map((p) => p.etag))}"`) return undefined;
  return answer(req, bucket, key, etag, checksumOfEntry(rec), rec, rec.meta[SSE_META]);
}

export async function completeMultipartUpload(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const uploadId = uploadIdOf(req.query);
  try {
    await s3Upload(g, accessKey, bucket, key, uploadId);
  } catch (err) {
    if (isS3Error(err, 'NoSuchUpload')) {
      const again = await repeated(g, req, bucket, key, uploadId);
      if (again) return again;
    }
    throw err;
  }
  const list = partList(parseXml(await readXmlBody(req.body())));
  for (let i = 1; i < list.length; i++) if (list[i]!.partNumber <= list[i - 1]!.partNumber) throw S3Errors.InvalidPartOrder();
  const stored = await allParts(g, uploadId);
  const chosen: PartRecord[] = list.map((item) => {
    const p = stored.get(item.partNumber);
    if (!p || p.md5 !== item.etag) throw S3Errors.InvalidPart();
    for (const [a, v] of Object.entries(item.checksums) as Array<[ChecksumAlgorithm, string]>) {
      if (partChecksum(p, a) !== v) throw S3Errors.InvalidPart(`The ${a.toUpperCase()} of part ${p.partNumber} does not match the listed checksum.`);
    }
    return p;
  });
  chosen.forEach((p, i) => {
    if (i < chosen.length - 1 && p.size < MIN_PART_BYTES) {
      throw S3Errors.EntityTooSmall(`Your proposed upload is smaller than the minimum allowed size: part ${p.partNumber} is ${p.size} bytes, the minimum is ${MIN_PART_BYTES}`);
    }
  });
  const settings = await loadSettings(g, uploadId);
  const sum = settings.checksum ? await objectChecksum(settings.checksum, chosen) : undefined;
  checkRequestChecksum(req, sum);
  const precondition = writePrecondition(req);
  await checkEarly(g, precondition, bucket, key);
  const etag = multipartEtag(chosen.map((p) => p.md5));
  const meta: Record<string, string> = { ...settings.meta, [S3_ETAG_META]: etag, [S3_UPLOAD_META]: uploadId };
  if (sum) meta[CHECKSUM_META] = encodeChecksum(sum);
  if (sum && chosen.length <= MAX_PART_CHECKSUMS) {
    meta[PART_CHECKSUMS_META] = chosen.map((p) => partChecksum(p, sum.algorithm)).join(',');
  }
  // SSE-C: the parts open only with the key (given on Complete, as AWS allows, it is checked and used to sniff the
  // MIME type; not given, the type is application/octet-stream unless CreateMultipartUpload set one).
  const sseC = settings.meta[SSE_META]?.startsWith('C:') === true;
  const given = readKey(req);
  const customerKey = sseC && given.kind === 'C' ? checkReadKey(settings.meta[SSE_META], given) : undefined;
  const mime = settings.mime ?? (sseC && !customerKey ? 'application/octet-stream' : undefined);
  const policy = s3PutPolicy(g, bucket, key, { insertOnly: false, fileType: settings.fileType, trustMime: !!mime });
  const result = await withCustomerKey(customerKey, () => completeUpload(
    g,
    { bucket, key },
    uploadId,
    chosen.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
    {
      policy,
      accessKey,
      clientKey: key,
      ...(mime ? { clientMime: mime } : {}),
      custom: {},
      meta,
      reqId: req.reqId,
      ...(precondition ? { precondition } : {}),
      ...(settings.lock ? { lock: settings.lock } : {}),
    },
  ));
  g.metrics?.upload('s3', result.record.fsize);
  return answer(req, bucket, key, `"${etag}"`, sum, result.record, result.record.meta[SSE_META]);
}
