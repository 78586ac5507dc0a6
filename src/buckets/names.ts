/**
 * Bucket name rules (docs/development/kodo-protocol.md §8.6): 3–63 characters of `[a-z0-9-]`, a letter or digit at both ends.
 * Every bucket is reachable path-style (`/<bucket>/<key>`) on the one shared port, so names equal to the first
 * path segment of an API route (in any case) are reserved; a GET/HEAD whose first segment is one of them is an
 * unknown API route (404 `no such api`), never a download (roles/io/download.ts).
 */
import { Errors } from '../errors.js';

const NAME_RE = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/**
 * First path segments used by the API routes of every role. The version segments (`v2`, …) could never name a bucket anyway
 * (too short); they are listed so that `/v2/<typo>` is an API typo.
 */
export const RESERVED_BUCKET_NAMES: ReadonlySet<string> = new Set([
  'mkblk', 'bput', 'mkfile', 'buckets', 'objects', 'uploads',
  'stat', 'delete', 'copy', 'move', 'chgm', 'chtype', 'chstatus', 'deleteafterdays', 'lifecycle', 'restorear',
  'batch', 'list', 'fetch', 'prefetch', 'sisyphus', 'pfop', 'prefop', 'status',
  'mkbucket', 'mkbucketv2', 'mkbucketv3', 'drop', 'private', 'bucketinfo', 'domains', 'image', 'unimage',
  'corsrules', 'referantileech', 'accessmode', 'maxage', 'setbucketquota', 'getbucketquota', 'rules', 'events',
  'regions', 'query', 'nrop', 'pipelines', 'admin', 'health', 'healthz', 'metrics', 'api', 'uc', 'rs', 'rsf', 'io',
  'workflowtemplates', 'buckettagging', 'noindexpage', 'bucketinfos',
  'favicon.ico', 'robots.txt', 'v1', 'v2', 'v3', 'v4',
]);

/** Whether `name` is a reserved first path segment, compared case-insensitively (`STAT` is reserved too). */
export function isReservedBucketName(name: string): boolean {
  return RESERVED_BUCKET_NAMES.has(name.toLowerCase());
}

/** Validates a bucket name for creation: 400 when malformed or reserved. */
export function checkBucketName(name: string): void {
  if (!NAME_RE.test(name) || name.includes('--')) {
    throw Errors.badBucketName('3-63 characters of a-z, 0-9 and -, starting and ending with a letter or digit');
  }
  if (isReservedBucketName(name)) throw Errors.reservedBucketName(name);
}

/** Normalises a download domain: lower-case host name, no port, no trailing dot; 400 when not a host name. */
export function normaliseDomain(domain: string): string {
  const d = domain.trim().toLowerCase().replace(/\.$/, '');
  if (!/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(d)) {
    throw Errors.badDomain(domain);
  }
  return d;
}
