/**
 * The route table of the S3 listener (docs/development/kodo-protocol.md §18.1): one row per operation — method,
 * path shape (`service` `/`, `bucket` `/<bucket>`, `object` `/<bucket>/<key>`), the sub-resource query parameter
 * that selects it (`?location`, `?list-type=2`, `?delete`, … ; value checked when given as `name=value`), an
 * optional header that selects it (`x-amz-copy-source`), who may call it, and its handler (one module per
 * operation under ops/).
 *
 * Matching (`matchRoute`): among the rows of the method and shape, the most specific whose query parameter (and
 * header) the request carries; a row without a query matches only when the request carries none of the known
 * sub-resources. A request naming a known sub-resource no row serves is NotImplemented (501), so clients see a
 * clear answer; a method no row of the shape serves is MethodNotAllowed (405). `OPTIONS` (CORS preflights, cors.ts)
 * ignores sub-resources: a preflight carries the query of the request it asks about.
 */
import { deleteBucketEncryption, getBucketEncryption, putBucketEncryption } from './ops/bucket-encryption.js';
import { deleteBucketReplication, getBucketReplication, putBucketReplication } from './ops/bucket-replication.js';
import { deletePublicAccessBlock, getPublicAccessBlock, putPublicAccessBlock } from './ops/bucket-public-access-block.js';
import { S3Errors } from './errors.js';
import type { S3Operation } from './types.js';
import { copyObject } from './ops/copy-object.js';
import { createBucket } from './ops/create-bucket.js';
import { deleteBucket } from './ops/delete-bucket.js';
import { deleteObject } from './ops/delete-object.js';
import { deleteObjects } from './ops/delete-objects.js';
import { getBucketLocation } from './ops/get-bucket-location.js';
import { getObject } from './ops/get-object.js';
import { getObjectAttributes } from './ops/get-object-attributes.js';
import { headBucket } from './ops/head-bucket.js';
import { listBuckets } from './ops/list-buckets.js';
import { listObjectVersions } from './ops/list-object-versions.js';
import { listObjects } from './ops/list-objects.js';
import { listObjectsV2 } from './ops/list-objects-v2.js';
import { s3PutObject } from './ops/put-object.js';
import { abortMultipartUpload } from './ops/abort-multipart-upload.js';
import { completeMultipartUpload } from './ops/complete-multipart-upload.js';
import { createMultipartUpload } from './ops/create-multipart-upload.js';
import { listMultipartUploads } from './ops/list-multipart-uploads.js';
import { listParts } from './ops/list-parts.js';
import { uploadPart, uploadPartCopy } from './ops/upload-part.js';
import { postObject } from './ops/post-object.js';
import { getBucketAcl, getObjectAcl, putBucketAcl, putObjectAcl } from './ops/bucket-acl.js';
import { deleteBucketOwnershipControls, getBucketOwnershipControls, putBucketOwnershipControls } from './ops/bucket-ownership.js';
import { deleteBucketTagging, getBucketTagging, putBucketTagging } from './ops/bucket-tagging.js';
import { deleteBucketPolicy, getBucketPolicy, getBucketPolicyStatus, putBucketPolicy } from './ops/bucket-policy.js';
import { deleteBucketCors, getBucketCors, putBucketCors } from './ops/bucket-cors.js';
import { deleteBucketLifecycle, getBucketLifecycle, putBucketLifecycle } from './ops/bucket-lifecycle.js';
import { getBucketVersioning, putBucketVersioning } from './ops/bucket-versioning.js';
import {
  getObjectLegalHold,
  getObjectLockConfiguration,
  getObjectRetention,
  putObjectLegalHold,
  putObjectLockConfiguration,
  putObjectRetention,
} from './ops/object-lock.js';
import { optionsObject } from './cors.js';
import { deleteObjectTagging, getObjectTagging, putObjectTagging } from './ops/object-tagging.js';

/** What a path names. */
export type PathShape = 'service' | 'bucket' | 'object';

/**
 * Who may call an operation: a signed caller only, also anonymous callers on public buckets (reads: the bucket's
 * or object's ACL decides in the operation, access.ts), also anonymous callers the bucket's ACL lets write (`acl`:
 * PutObject on a public-read-write bucket), or anyone with
 * the operation checking a signature of its own (`form`: POST Object's signed policy), or nobody's: `none`, not
 * authenticated at all (CORS preflights: browsers send no credentials, and a presigned URL's query signs the actual
 * request, not its preflight).
 */
export type RouteAuth = 'signed' | 'public-read' | 'acl' | 'form' | 'none';

/** One row of the table. */
export interface S3Route {
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE' | 'OPTIONS';
  shape: PathShape;
  /** A query parameter that selects the row: `name` (present) or `name=value`. */
  query?: string;
  /** A request header that selects the row (present). */
  header?: string;
  /** The S3 operation name (logs, metrics, docs). */
  operation: string;
  auth: RouteAuth;
  /**
   * The IAM action (docs/reference/iam.md): an S3 action (`s3:GetObject`), mapped to the Kodo action the evaluator
   * decides on by the one table of iam/operation-actions.ts and checked by server.ts's auth step on the request's
   * bucket (and key; a listing with its `prefix`) before the handler; `owner-only` (the account's own keys:
   * CreateBucket); `none` (ListBuckets, filtered to what the key may see; preflights).
   */
  iam: string;
  handler: S3Operation;
}

/**
 * Query parameters that name a sub-resource (a different operation on the same path). A request carrying one of
 * these that no row serves answers NotImplemented.
 */
export const SUB_RESOURCES: ReadonlySet<string> = new Set([
  'accelerate', 'acl', 'analytics', 'attributes', 'cors', 'delete', 'encryption', 'intelligent-tiering', 'inventory',
  'legal-hold', 'lifecycle', 'location', 'logging', 'metrics', 'notification', 'object-lock', 'ownershipControls',
  'policy', 'policyStatus', 'publicAccessBlock', 'replication', 'requestPayment', 'restore', 'retention', 'select',
  'session', 'tagging', 'torrent', 'uploadId', 'uploads', 'versioning', 'versions', 'website', 'list-type',
]);

/** The table. Rows are added, never reordered: matching picks by specificity, not position. */
export const ROUTES: S3Route[] = [
  { method: 'GET', shape: 'service', operation: 'ListBuckets', auth: 'signed', iam: 'none', handler: listBuckets },
  { method: 'PUT', shape: 'bucket', operation: 'CreateBucket', auth: 'signed', iam: 'owner-only', handler: createBucket },
  { method: 'DELETE', shape: 'bucket', operation: 'DeleteBucket', auth: 'signed', iam: 's3:DeleteBucket', handler: deleteBucket },
  { method: 'HEAD', shape: 'bucket', operation: 'HeadBucket', auth: 'signed', iam: 's3:ListBucket', handler: headBucket },
  { method: 'GET', shape: 'bucket', query: 'location', operation: 'GetBucketLocation', auth: 'signed', iam: 's3:GetBucketLocation', handler: getBucketLocation },
  { method: 'GET', shape: 'bucket', operation: 'ListObjects', auth: 'public-read', iam: 's3:ListBucket', handler: listObjects },
  { method: 'GET', shape: 'bucket', query: 'list-type=2', operation: 'ListObjectsV2', auth: 'public-read', iam: 's3:ListBucket', handler: listObjectsV2 },
  { method: 'GET', shape: 'bucket', query: 'versions', operation: 'ListObjectVersions', auth: 'signed', iam: 's3:ListBucketVersions', handler: listObjectVersions },
  { method: 'POST', shape: 'bucket', query: 'delete', operation: 'DeleteObjects', auth: 'signed', iam: 's3:DeleteObject', handler: deleteObjects },
  { method: 'PUT', shape: 'object', operation: 'PutObject', auth: 'acl', iam: 's3:PutObject', handler: s3PutObject },
  { method: 'PUT', shape: 'object', header: 'x-amz-copy-source', operation: 'CopyObject', auth: 'signed', iam: 's3:PutObject', handler: copyObject },
  { method: 'GET', shape: 'object', operation: 'GetObject', auth: 'public-read', iam: 's3:GetObject', handler: getObject },
  { method: 'HEAD', shape: 'object', operation: 'HeadObject', auth: 'public-read', iam: 's3:GetObject', handler: getObject },
  { method: 'DELETE', shape: 'object', operation: 'DeleteObject', auth: 'signed', iam: 's3:DeleteObject', handler: deleteObject },
  { method: 'GET', shape: 'object', query: 'attributes', operation: 'GetObjectAttributes', auth: 'signed', iam: 's3:GetObjectAttributes', handler: getObjectAttributes },
  // Multipart uploads (ops/*-multipart-upload.ts, upload-part.ts, list-parts.ts).
  { method: 'POST', shape: 'object', query: 'uploads', operation: 'CreateMultipartUpload', auth: 'signed', iam: 's3:PutObject', handler: createMultipartUpload },
  { method: 'PUT', shape: 'object', query: 'uploadId', operation: 'UploadPart', auth: 'signed', iam: 's3:PutObject', handler: uploadPart },
  { method: 'PUT', shape: 'object', query: 'uploadId', header: 'x-amz-copy-source', operation: 'UploadPartCopy', auth: 'signed', iam: 's3:PutObject', handler: uploadPartCopy },
  { method: 'POST', shape: 'object', query: 'uploadId', operation: 'CompleteMultipartUpload', auth: 'signed', iam: 's3:PutObject', handler: completeMultipartUpload },
  { method: 'DELETE', shape: 'object', query: 'uploadId', operation: 'AbortMultipartUpload', auth: 'signed', iam: 's3:AbortMultipartUpload', handler: abortMultipartUpload },
  { method: 'GET', shape: 'object', query: 'uploadId', operation: 'ListParts', auth: 'signed', iam: 's3:ListMultipartUploadParts', handler: listParts },
  { method: 'GET', shape: 'bucket', query: 'uploads', operation: 'ListMultipartUploads', auth: 'signed', iam: 's3:ListBucketMultipartUploads', handler: listMultipartUploads },
  { method: 'POST', shape: 'bucket', operation: 'PostObject', auth: 'form', iam: 's3:PutObject', handler: postObject },
  // Sub-resources (ops/bucket-acl.ts, bucket-tagging.ts, object-tagging.ts, bucket-versioning.ts).
  { method: 'GET', shape: 'bucket', query: 'acl', operation: 'GetBucketAcl', auth: 'signed', iam: 's3:GetBucketAcl', handler: getBucketAcl },
  { method: 'PUT', shape: 'bucket', query: 'acl', operation: 'PutBucketAcl', auth: 'signed', iam: 's3:PutBucketAcl', handler: putBucketAcl },
  { method: 'GET', shape: 'object', query: 'acl', operation: 'GetObjectAcl', auth: 'signed', iam: 's3:GetObjectAcl', handler: getObjectAcl },
  { method: 'PUT', shape: 'object', query: 'acl', operation: 'PutObjectAcl', auth: 'signed', iam: 's3:PutObjectAcl', handler: putObjectAcl },
  { method: 'GET', shape: 'bucket', query: 'ownershipControls', operation: 'GetBucketOwnershipControls', auth: 'signed', iam: 's3:GetBucketOwnershipControls', handler: getBucketOwnershipControls },
  { method: 'PUT', shape: 'bucket', query: 'ownershipControls', operation: 'PutBucketOwnershipControls', auth: 'signed', iam: 's3:PutBucketOwnershipControls', handler: putBucketOwnershipControls },
  { method: 'DELETE', shape: 'bucket', query: 'ownershipControls', operation: 'DeleteBucketOwnershipControls', auth: 'signed', iam: 's3:PutBucketOwnershipControls', handler: deleteBucketOwnershipControls },
  { method: 'GET', shape: 'bucket', query: 'tagging', operation: 'GetBucketTagging', auth: 'signed', iam: 's3:GetBucketTagging', handler: getBucketTagging },
  { method: 'PUT', shape: 'bucket', query: 'tagging', operation: 'PutBucketTagging', auth: 'signed', iam: 's3:PutBucketTagging', handler: putBucketTagging },
  { method: 'DELETE', shape: 'bucket', query: 'tagging', operation: 'DeleteBucketTagging', auth: 'signed', iam: 's3:PutBucketTagging', handler: deleteBucketTagging },
  { method: 'GET', shape: 'object', query: 'tagging', operation: 'GetObjectTagging', auth: 'signed', iam: 's3:GetObjectTagging', handler: getObjectTagging },
  { method: 'PUT', shape: 'object', query: 'tagging', operation: 'PutObjectTagging', auth: 'signed', iam: 's3:PutObjectTagging', handler: putObjectTagging },
  { method: 'DELETE', shape: 'object', query: 'tagging', operation: 'DeleteObjectTagging', auth: 'signed', iam: 's3:DeleteObjectTagging', handler: deleteObjectTagging },
  { method: 'GET', shape: 'bucket', query: 'policy', operation: 'GetBucketPolicy', auth: 'signed', iam: 's3:GetBucketPolicy', handler: getBucketPolicy },
  { method: 'PUT', shape: 'bucket', query: 'policy', operation: 'PutBucketPolicy', auth: 'signed', iam: 's3:PutBucketPolicy', handler: putBucketPolicy },
  { method: 'DELETE', shape: 'bucket', query: 'policy', operation: 'DeleteBucketPolicy', auth: 'signed', iam: 's3:DeleteBucketPolicy', handler: deleteBucketPolicy },
  { method: 'GET', shape: 'bucket', query: 'policyStatus', operation: 'GetBucketPolicyStatus', auth: 'signed', iam: 's3:GetBucketPolicyStatus', handler: getBucketPolicyStatus },
  { method: 'GET', shape: 'bucket', query: 'cors', operation: 'GetBucketCors', auth: 'signed', iam: 's3:GetBucketCORS', handler: getBucketCors },
  { method: 'PUT', shape: 'bucket', query: 'cors', operation: 'PutBucketCors', auth: 'signed', iam: 's3:PutBucketCORS', handler: putBucketCors },
  { method: 'DELETE', shape: 'bucket', query: 'cors', operation: 'DeleteBucketCors', auth: 'signed', iam: 's3:PutBucketCORS', handler: deleteBucketCors },
  { method: 'GET', shape: 'bucket', query: 'lifecycle', operation: 'GetBucketLifecycleConfiguration', auth: 'signed', iam: 's3:GetLifecycleConfiguration', handler: getBucketLifecycle },
  { method: 'PUT', shape: 'bucket', query: 'lifecycle', operation: 'PutBucketLifecycleConfiguration', auth: 'signed', iam: 's3:PutLifecycleConfiguration', handler: putBucketLifecycle },
  { method: 'DELETE', shape: 'bucket', query: 'lifecycle', operation: 'DeleteBucketLifecycle', auth: 'signed', iam: 's3:PutLifecycleConfiguration', handler: deleteBucketLifecycle },
  { method: 'GET', shape: 'bucket', query: 'encryption', operation: 'GetBucketEncryption', auth: 'signed', iam: 's3:GetEncryptionConfiguration', handler: getBucketEncryption },
  { method: 'PUT', shape: 'bucket', query: 'encryption', operation: 'PutBucketEncryption', auth: 'signed', iam: 's3:PutEncryptionConfiguration', handler: putBucketEncryption },
  { method: 'DELETE', shape: 'bucket', query: 'encryption', operation: 'DeleteBucketEncryption', auth: 'signed', iam: 's3:PutEncryptionConfiguration', handler: deleteBucketEncryption },
  { method: 'GET', shape: 'bucket', query: 'replication', operation: 'GetBucketReplication', auth: 'signed', iam: 's3:GetReplicationConfiguration', handler: getBucketReplication },
  { method: 'PUT', shape: 'bucket', query: 'replication', operation: 'PutBucketReplication', auth: 'signed', iam: 's3:PutReplicationConfiguration', handler: putBucketReplication },
  { method: 'DELETE', shape: 'bucket', query: 'replication', operation: 'DeleteBucketReplication', auth: 'signed', iam: 's3:PutReplicationConfiguration', handler: deleteBucketReplication },
  { method: 'GET', shape: 'bucket', query: 'versioning', operation: 'GetBucketVersioning', auth: 'signed', iam: 's3:GetBucketVersioning', handler: getBucketVersioning },
  { method: 'PUT', shape: 'bucket', query: 'versioning', operation: 'PutBucketVersioning', auth: 'signed', iam: 's3:PutBucketVersioning', handler: putBucketVersioning },
  // Object lock (ops/object-lock.ts).
  { method: 'GET', shape: 'bucket', query: 'object-lock', operation: 'GetObjectLockConfiguration', auth: 'signed', iam: 's3:GetBucketObjectLockConfiguration', handler: getObjectLockConfiguration },
  { method: 'PUT', shape: 'bucket', query: 'object-lock', operation: 'PutObjectLockConfiguration', auth: 'signed', iam: 's3:PutBucketObjectLockConfiguration', handler: putObjectLockConfiguration },
  { method: 'GET', shape: 'object', query: 'retention', operation: 'GetObjectRetention', auth: 'signed', iam: 's3:GetObjectRetention', handler: getObjectRetention },
  { method: 'PUT', shape: 'object', query: 'retention', operation: 'PutObjectRetention', auth: 'signed', iam: 's3:PutObjectRetention', handler: putObjectRetention },
  { method: 'GET', shape: 'object', query: 'legal-hold', operation: 'GetObjectLegalHold', auth: 'signed', iam: 's3:GetObjectLegalHold', handler: getObjectLegalHold },
  { method: 'PUT', shape: 'object', query: 'legal-hold', operation: 'PutObjectLegalHold', auth: 'signed', iam: 's3:PutObjectLegalHold', handler: putObjectLegalHold },
  { method: 'GET', shape: 'bucket', query: 'publicAccessBlock', operation: 'GetPublicAccessBlock', auth: 'signed', iam: 's3:GetBucketPublicAccessBlock', handler: getPublicAccessBlock },
  { method: 'PUT', shape: 'bucket', query: 'publicAccessBlock', operation: 'PutPublicAccessBlock', auth: 'signed', iam: 's3:PutBucketPublicAccessBlock', handler: putPublicAccessBlock },
  { method: 'DELETE', shape: 'bucket', query: 'publicAccessBlock', operation: 'DeletePublicAccessBlock', auth: 'signed', iam: 's3:PutBucketPublicAccessBlock', handler: deletePublicAccessBlock },
  // CORS preflights (cors.ts).
  { method: 'OPTIONS', shape: 'bucket', operation: 'OptionsObject', auth: 'none', iam: 'none', handler: optionsObject },
  { method: 'OPTIONS', shape: 'object', operation: 'OptionsObject', auth: 'none', iam: 'none', handler: optionsObject },
];

/** Whether the request carries the row's query selector. */
function queryMatches(selector: string, query: URLSearchParams): boolean {
  const eq = selector.indexOf('=');
  if (eq < 0) return query.has(selector);
  return query.get(selector.slice(0, eq)) === selector.slice(eq + 1);
}

/** The name of a row's query selector. */
function selectorName(selector: string): string {
  const eq = selector.indexOf('=');
  return eq < 0 ? selector : selector.slice(0, eq);
}

/**
 * The row serving a request (see the module comment). Throws NotImplemented (a sub-resource or header no row
 * serves) or MethodNotAllowed (no row of the method for the shape).
 */
export function matchRoute(
  method: string,
  shape: PathShape,
  query: URLSearchParams,
  hasHeader: (name: string) => boolean,
  routes: readonly S3Route[] = ROUTES,
): S3Route {
  const ofShape = routes.filter((r) => r.shape === shape);
  const candidates = ofShape.filter((r) => r.method === method);
  if (candidates.length === 0) {
    if (ofShape.length === 0 || !['GET', 'HEAD', 'PUT', 'POST', 'DELETE'].includes(method)) throw S3Errors.MethodNotAllowed();
    // A known method with a sub-resource is an operation we lack; without one, the method is not one of the path's.
    if ([...query.keys()].some((k) => SUB_RESOURCES.has(k))) throw S3Errors.NotImplemented();
    throw S3Errors.MethodNotAllowed();
  }
  const carried = method === 'OPTIONS' ? [] : [...query.keys()].filter((k) => SUB_RESOURCES.has(k));
  let best: S3Route | undefined;
  let bestScore = -1;
  for (const r of candidates) {
    if (r.query !== undefined && !queryMatches(r.query, query)) continue;
    if (r.header !== undefined && !hasHeader(r.header)) continue;
    // Every sub-resource the request carries must be the row's own.
    if (carried.some((k) => r.query === undefined || selectorName(r.query) !== k)) continue;
    const score = (r.query !== undefined ? 2 : 0) + (r.header !== undefined ? 1 : 0);
    if (score > bestScore) {
      best = r;
      bestScore = score;
    }
  }
  if (!best) throw S3Errors.NotImplemented();
  return best;
}
