/**
 * ListBuckets (`GET /`): the buckets the caller may act on (the root key: every bucket; an account key: its own),
 * by name, each with its creation date and region (`BucketRegion`); Owner is the AccessKey.
 *
 * Paging (AWS S3 API Reference, ListBuckets): `max-buckets` (1..10000) answers at most that many buckets and a
 * `<ContinuationToken>` when more follow; `continuation-token` (the token of the previous page: the last name
 * listed, base64url) resumes after it; `prefix` keeps the names starting with it (echoed as `<Prefix>`). Without
 * `max-buckets` every bucket is listed in one answer. Errors: InvalidArgument (400) for a bad `max-buckets` or
 * token.
 */
import { mayAccess, VISIBLE } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { s3RegionOf } from '../region.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';

/** Most buckets one page may answer (S3's `max-buckets` limit). */
const MAX_BUCKETS = 10_000;

/** The `max-buckets` parameter (undefined when absent); InvalidArgument unless 1..10000. */
function maxBucketsOf(req: S3Request): number | undefined {
  const raw = req.query.get('max-buckets');
  if (raw === null) return undefined;
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= MAX_BUCKETS)) throw S3Errors.InvalidArgument(`max-buckets must be an integer from 1 to ${MAX_BUCKETS}`);
  return n;
}

/** The name a continuation token resumes after (undefined when none); InvalidArgument when it is not one of ours. */
function afterOf(req: S3Request): string | undefined {
  const token = req.query.get('continuation-token');
  if (token === null) return undefined;
  const name = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url').toString('utf8') : '';
  if (name === '') throw S3Errors.InvalidArgument('The continuation token provided is incorrect');
  return name;
}

export async function listBuckets(g: Granary, req: S3Request): Promise<S3Response> {
  const ak = signedCaller(req);
  const max = maxBucketsOf(req);
  const after = afterOf(req);
  const prefix = req.query.get('prefix') ?? '';
  const buckets = (await g.meta.listBuckets())
    .filter((b) => mayAccess(g, ak, b, { action: VISIBLE }) && b.name.startsWith(prefix) && (after === undefined || b.name > after))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  const page = max === undefined ? buckets : buckets.slice(0, max);
  const region = s3RegionOf(g.config.region);
  const items = page.map((b) => `<Bucket>${el('Name', b.name)}${el('CreationDate', isoTime(b.ctime * 1000))}${el('BucketRegion', region)}</Bucket>`).join('');
  const owner = `<Owner>${el('ID', ak)}${el('DisplayName', ak)}</Owner>`;
  const last = page[page.length - 1];
  const token = page.length < buckets.length && last ? el('ContinuationToken', Buffer.from(last.name, 'utf8').toString('base64url')) : '';
  const echo = req.query.has('prefix') ? el('Prefix', prefix) : '';
  return xmlResponse(xmlDocument('ListAllMyBucketsResult', `${owner}<Buckets>${items}</Buckets>${token}${echo}`));
}
