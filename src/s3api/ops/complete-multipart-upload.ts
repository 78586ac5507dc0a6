/**
 * CompleteMultipartUpload (`POST /<bucket>/<key>?uploadId=<id>`, body
 * `<CompleteMultipartUpload><Part><PartNumber/><ETag/>[<ChecksumCRC32/>…]</Part>…</CompleteMultipartUpload>`):
 * checks the list, then commits through Kodo's v2 complete (objects/resumable/multipart.ts `completeUpload`: a
 * manifest of the parts, nothing copied, the upload consumed in the same commit) with the settings of
 * CreateMultipartUpload, so the object is an ordinary entry (docs/development/kodo-protocol.md §18.8).
 *
 * Checks, in S3's order: an empty or malformed list → MalformedXML; part numbers not strictly ascending →
 * InvalidPartOrder; a part not uploaded, or whose ETag (its MD5, quotes optional) differs → InvalidPart; a part
 * other than the last under 5 MiB → EntityTooSmall. Per-part checksums in the list (`<ChecksumCRC32/>`, …) are
 * accepted as they are: each part's bytes were verified against its checksum header at UploadPart. Unknown
 * upload → NoSuchUpload.
 * Answer: `<CompleteMultipartUploadResult><Location/><Bucket/><Key/><ETag/></CompleteMultipartUploadResult>`, ETag
 * `"<hex MD5 of the part MD5s>-<n>"`, kept with the entry as `@s3-etag`.
 */
import type { Granary } from '../../context.js';
import { completeUpload } from '../../objects/resumable/multipart.js';
import type { PartRecord } from '../../ports/meta.js';
import { bucketName, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { loadSettings, MIN_PART_BYTES, multipartEtag, normalEtag, s3Upload, S3_ETAG_META, uploadIdOf } from '../multipart.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlEscape, xmlDocument, type XmlNode } from '../xml.js';
import { s3PutPolicy } from './put-object.js';

/** The `{partNumber, etag}` list of the request body; MalformedXML when it has none or is malformed. */
function partList(doc: Record<string, XmlNode>): Array<{ partNumber: number; etag: string }> {
  const root = doc.CompleteMultipartUpload;
  if (root === undefined || typeof root === 'string' || Array.isArray(root)) throw S3Errors.MalformedXML();
  const parts = root.Part;
  if (parts === undefined) throw S3Errors.MalformedXML();
  const out: Array<{ partNumber: number; etag: string }> = [];
  for (const p of Array.isArray(parts) ? parts : [parts]) {
    if (typeof p === 'string' || Array.isArray(p)) throw S3Errors.MalformedXML();
    const n = textOf(p.PartNumber)?.trim();
    const etag = textOf(p.ETag);
    if (n === undefined || !/^\d{1,5}$/.test(n) || etag === undefined) throw S3Errors.MalformedXML();
    out.push({ partNumber: Number(n), etag: normalEtag(etag) });
  }
  if (out.length === 0) throw S3Errors.MalformedXML();
  return out;
}

/** The stored parts of an upload (1..10000), by number. */
async function storedParts(g: Granary, uploadId: string): Promise<Map<number, PartRecord>> {
  const out = new Map<number, PartRecord>();
  for (let after = 0; ; ) {
    const page = await g.meta.sessions.listParts(uploadId, after, 1000);
    for (const p of page) out.set(p.partNumber, p);
    if (page.length < 1000) return out;
    after = page[page.length - 1]?.partNumber ?? after;
  }
}

export async function completeMultipartUpload(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const uploadId = uploadIdOf(req.query);
  await s3Upload(g, accessKey, bucket, key, uploadId);
  const list = partList(parseXml(await readXmlBody(req.body())));
  for (let i = 1; i < list.length; i++) if (list[i]!.partNumber <= list[i - 1]!.partNumber) throw S3Errors.InvalidPartOrder();
  const stored = await storedParts(g, uploadId);
  const chosen: PartRecord[] = list.map((item) => {
    const p = stored.get(item.partNumber);
    if (!p || p.md5 !== item.etag) throw S3Errors.InvalidPart();
    return p;
  });
  chosen.forEach((p, i) => {
    if (i < chosen.length - 1 && p.size < MIN_PART_BYTES) {
      throw S3Errors.EntityTooSmall(`Your proposed upload is smaller than the minimum allowed size: part ${p.partNumber} is ${p.size} bytes, the minimum is ${MIN_PART_BYTES}`);
    }
  });
  const settings = await loadSettings(g, uploadId);
  const etag = multipartEtag(chosen.map((p) => p.md5));
  const policy = s3PutPolicy(g, bucket, key, { insertOnly: false, fileType: settings.fileType, trustMime: !!settings.mime });
  const result = await completeUpload(
    g,
    { bucket, key },
    uploadId,
    chosen.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
    {
      policy,
      accessKey,
      clientKey: key,
      ...(settings.mime ? { clientMime: settings.mime } : {}),
      custom: {},
      meta: { ...settings.meta, [S3_ETAG_META]: etag },
      reqId: req.reqId,
    },
  );
  g.metrics?.upload('s3', result.record.fsize);
  const host = req.headers.host ?? 'localhost';
  const location = `http://${host}/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
  const inner = el('Location', location) + el('Bucket', bucket) + el('Key', key) + `<ETag>${xmlEscape(`"${etag}"`)}</ETag>`;
  return xmlResponse(xmlDocument('CompleteMultipartUploadResult', inner));
}
