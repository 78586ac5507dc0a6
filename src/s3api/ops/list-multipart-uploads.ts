/**
 * ListMultipartUploads (`GET /<bucket>?uploads`): the bucket's live uploads ordered by key (byte-wise) then upload
 * id, with `prefix`, `delimiter` (keys rolled up into CommonPrefixes), `key-marker` + `upload-id-marker`,
 * `max-uploads` (default and cap 1000; uploads and prefixes count together) and `encoding-type=url`
 * (docs/development/kodo-protocol.md §18.8). Uploads of every key pair are listed (S3 lists all of the bucket's).
 * Upload ids are random hex, so the order within a key is by id, not by initiation time.
 */
import type { Granary } from '../../context.js';
import { nowSeconds } from '../../ports/clock.js';
import type { UploadRecord } from '../../ports/meta.js';
import { accessBucket, signedCaller } from '../access.js';
import { encodeName, listParams } from '../listing.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';
import { intParam } from './list-parts.js';

/** Rows read per store query while rolling up. */
const BATCH = 1000;

export async function listMultipartUploads(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const p = listParams(req);
  const max = Math.min(intParam(req.query, 'max-uploads', 1000), 1000);
  const keyMarker = req.query.get('key-marker') ?? '';
  const idMarker = req.query.get('upload-id-marker') ?? '';
  const now = nowSeconds(g.clock);
  // A key marker without an upload id marker resumes after every upload of that key.
  let after: { key: string; id: string } | undefined = keyMarker === '' ? undefined : { key: keyMarker, id: idMarker === '' ? '\uffff' : idMarker };
  const uploads: UploadRecord[] = [];
  const prefixes: string[] = [];
  let truncated = false;
  let lastKey = '';
  let lastId = '';
  outer: while (max > 0) {
    const rows = await g.meta.sessions.listUploads(bucket.name, p.prefix, after, BATCH, now);
    for (const u of rows) {
      const key = u.key ?? '';
      if (p.delimiter !== '') {
        const at = key.indexOf(p.delimiter, p.prefix.length);
        if (at >= 0) {
          const cp = key.slice(0, at + p.delimiter.length);
          if (prefixes[prefixes.length - 1] === cp) continue;
          if (uploads.length + prefixes.length >= max) {
            truncated = true;
            break outer;
          }
          prefixes.push(cp);
          lastKey = cp;
          lastId = '';
          continue;
        }
      }
      if (uploads.length + prefixes.length >= max) {
        truncated = true;
        break outer;
      }
      uploads.push(u);
      lastKey = key;
      lastId = u.id;
    }
    if (rows.length < BATCH) break;
    const tail = rows[rows.length - 1]!;
    after = { key: tail.key ?? '', id: tail.id };
  }
  const who = (ak: string): string => `<ID>${ak}</ID><DisplayName>${ak}</DisplayName>`;
  const inner =
    el('Bucket', bucket.name) +
    el('KeyMarker', encodeName(keyMarker, p)) +
    el('UploadIdMarker', idMarker) +
    (truncated ? el('NextKeyMarker', encodeName(lastKey, p)) + el('NextUploadIdMarker', lastId) : '') +
    (p.encodeUrl ? el('EncodingType', 'url') : '') +
    el('MaxUploads', max) +
    el('IsTruncated', truncated) +
    (p.prefix !== '' ? el('Prefix', encodeName(p.prefix, p)) : '') +
    (p.delimiter !== '' ? el('Delimiter', encodeName(p.delimiter, p)) : '') +
    uploads
      .map(
        (u) =>
          `<Upload>${el('Key', encodeName(u.key ?? '', p))}${el('UploadId', u.id)}<Initiator>${who(u.accessKey)}</Initiator><Owner>${who(u.accessKey)}</Owner>${el('StorageClass', 'STANDARD')}${el('Initiated', isoTime(u.createdAt * 1000))}</Upload>`,
      )
      .join('') +
    prefixes.map((cp) => `<CommonPrefixes>${el('Prefix', encodeName(cp, p))}</CommonPrefixes>`).join('');
  return xmlResponse(xmlDocument('ListMultipartUploadsResult', inner));
}
