/**
 * ListBuckets (`GET /`): the buckets the caller may act on (the root key: every bucket; an account key: its own),
 * by name, each with its creation date; Owner is the AccessKey.
 */
import { mayAccess } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { signedCaller } from '../access.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';

export async function listBuckets(g: Granary, req: S3Request): Promise<S3Response> {
  const ak = signedCaller(req);
  const buckets = (await g.meta.listBuckets()).filter((b) => mayAccess(g, ak, b)).sort((a, b) => (a.name < b.name ? -1 : 1));
  const items = buckets.map((b) => `<Bucket>${el('Name', b.name)}${el('CreationDate', isoTime(b.ctime * 1000))}</Bucket>`).join('');
  const owner = `<Owner>${el('ID', ak)}${el('DisplayName', ak)}</Owner>`;
  return xmlResponse(xmlDocument('ListAllMyBucketsResult', `${owner}<Buckets>${items}</Buckets>`));
}
