/**
 * The S3 error catalogue of the S3 listener (docs/development/kodo-protocol.md §18): every S3 error code Granary
 * answers with, declared once with its HTTP status and default message, as the AWS S3 API Reference lists them.
 * Code below the S3 routes throws `S3Error`s built here (`S3Errors.noSuchKey()`); domain code shared with the Kodo
 * API throws `KodoError`s, which `fromAnyError` maps to the S3 entry that means the same (a missing bucket → 404
 * NoSuchBucket, a quota refusal → 403 AccessDenied, …). The answer is XML:
 * `<Error><Code/><Message/><Resource/><RequestId/></Error>` (xml.ts `errorXml`).
 */
import { isKodoError, storageError, type ErrorKind, type KodoError } from '../errors.js';

/** One catalogue entry: the HTTP status and the default message. */
type Entry = readonly [status: number, message: string];

/** Every S3 error code the S3 listener answers with (AWS S3 API Reference, "Error responses"). */
const CATALOGUE = {
  AccessDenied: [403, 'Access Denied'],
  AccessForbidden: [403, 'CORSResponse: This CORS request is not allowed.'],
  AuthorizationHeaderMalformed: [400, 'The authorization header is malformed.'],
  AuthorizationQueryParametersError: [400, 'Error parsing the X-Amz-Credential parameter.'],
  AccessControlListNotSupported: [400, 'The bucket does not allow ACLs.'],
  BadDigest: [400, 'The Content-MD5 or checksum you specified did not match what we received.'],
  BadRequest: [400, 'Bad Request'],
  BucketAlreadyExists: [409, 'The requested bucket name is not available. The bucket namespace is shared by all users of the system.'],
  BucketAlreadyOwnedByYou: [409, 'Your previous request to create the named bucket succeeded and you already own it.'],
  BucketNotEmpty: [409, 'The bucket you tried to delete is not empty.'],
  EntityTooLarge: [400, 'Your proposed upload exceeds the maximum allowed object size.'],
  EntityTooSmall: [400, 'Your proposed upload is smaller than the minimum allowed object size.'],
  IncompleteBody: [400, 'You did not provide the number of bytes specified by the Content-Length HTTP header.'],
  InternalError: [500, 'We encountered an internal error. Please try again.'],
  InvalidAccessKeyId: [403, 'The AWS access key Id you provided does not exist in our records.'],
  InvalidArgument: [400, 'Invalid Argument'],
  InvalidBucketName: [400, 'The specified bucket is not valid.'],
  InvalidBucketState: [409, 'The request is not valid with the current state of the bucket.'],
  InvalidBucketAclWithObjectOwnership: [400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"],
  InvalidDigest: [400, 'The Content-MD5 you specified is not valid.'],
  InvalidLocationConstraint: [400, 'The specified location-constraint is not valid.'],
  InvalidObjectState: [403, 'The operation is not valid for the object\'s storage class.'],
  InvalidPart: [400, 'One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part\'s entity tag.'],
  InvalidPartOrder: [400, 'The list of parts was not in ascending order. The parts list must be specified in order by part number.'],
  InvalidPolicyDocument: [400, 'The content of the form does not meet the conditions specified in the policy document.'],
  InvalidRange: [416, 'The requested range is not satisfiable'],
  InvalidRequest: [400, 'Invalid Request'],
  InvalidRetentionPeriod: [400, 'The retention period is invalid.'],
  InvalidStorageClass: [400, 'The storage class you specified is not valid.'],
  InvalidTag: [400, 'The tag provided was not a valid tag.'],
  InvalidURI: [400, 'Couldn\'t parse the specified URI.'],
  KeyTooLongError: [400, 'Your key is too long.'],
  MalformedPOSTRequest: [400, 'The body of your POST request is not well-formed multipart/form-data.'],
  MalformedPolicy: [400, 'Policies must be valid JSON and the first byte must be \'{\''],
  MalformedACLError: [400, 'The XML you provided was not well-formed or did not validate against our published schema.'],
  MalformedXML: [400, 'The XML you provided was not well-formed or did not validate against our published schema.'],
  MaxPostPreDataLengthExceeded: [400, 'Your POST request fields preceding the upload file were too large.'],
  MethodNotAllowed: [405, 'The specified method is not allowed against this resource.'],
  NoSuchBucket: [404, 'The specified bucket does not exist.'],
  NoSuchBucketPolicy: [404, 'The bucket policy does not exist'],
  NoSuchCORSConfiguration: [404, 'The CORS configuration does not exist'],
  NoSuchKey: [404, 'The specified key does not exist.'],
  NoSuchPublicAccessBlockConfiguration: [404, 'The public access block configuration was not found'],
  NoSuchLifecycleConfiguration: [404, 'The lifecycle configuration does not exist'],
  NoSuchObjectLockConfiguration: [404, 'The specified object does not have a ObjectLock configuration'],
  NoSuchTagSet: [404, 'The TagSet does not exist'],
  NoSuchUpload: [404, 'The specified multipart upload does not exist.'],
  NoSuchVersion: [404, 'The specified version does not exist.'],
  ServerSideEncryptionConfigurationNotFoundError: [404, 'The server side encryption configuration was not found'],
  ReplicationConfigurationNotFoundError: [404, 'The replication configuration was not found'],
  NotImplemented: [501, 'A header or operation you provided implies functionality that is not implemented.'],
  ObjectLockConfigurationNotFoundError: [404, 'Object Lock configuration does not exist for this bucket'],
  PreconditionFailed: [412, 'At least one of the preconditions you specified did not hold.'],
  QuotaExceeded: [403, 'The bucket quota would be exceeded.'],
  RequestTimeTooSkewed: [403, 'The difference between the request time and the current time is too large.'],
  OwnershipControlsNotFoundError: [404, 'The bucket ownership controls were not found.'],
  ServiceUnavailable: [503, 'Please reduce your request rate.'],
  SignatureDoesNotMatch: [403, 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'],
  UnresolvableGrantByEmailAddress: [400, 'The email address you provided does not match any account on record.'],
  XAmzContentSHA256Mismatch: [400, 'The provided \'x-amz-content-sha256\' header does not match what was computed.'],
} as const satisfies Record<string, Entry>;

/** An S3 error code (a key of the catalogue). */
export type S3ErrorCode = keyof typeof CATALOGUE;

/** An S3 error: its code, status, message, and optional extra response headers (e.g. `Content-Range` of a 416). */
export class S3Error extends Error {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>> | undefined;

  /** `status` replaces the catalogue's where S3 answers one code with two statuses (sigv4.ts X-Amz-Expires). */
  constructor(
    readonly code: S3ErrorCode,
    message?: string,
    headers?: Readonly<Record<string, string>>,
    status?: number,
  ) {
    super(message ?? CATALOGUE[code][1]);
    this.name = 'S3Error';
    this.status = status ?? CATALOGUE[code][0];
    this.headers = headers;
  }
}

type Factories = { readonly [K in S3ErrorCode]: (message?: string, headers?: Record<string, string>) => S3Error };

/** `S3Errors.NoSuchKey()` is a 404 NoSuchKey with the catalogue's message; a message given replaces it. */
export const S3Errors: Factories = Object.freeze(
  Object.fromEntries(
    (Object.keys(CATALOGUE) as S3ErrorCode[]).map((code) => [code, (message?: string, headers?: Record<string, string>) => new S3Error(code, message, headers)]),
  ),
) as Factories;

/** Whether `err` is an S3Error (optionally of one of `codes`). */
export function isS3Error(err: unknown, ...codes: S3ErrorCode[]): err is S3Error {
  return err instanceof S3Error && (codes.length === 0 || codes.includes(err.code));
}

/** Kodo catalogue kinds (errors.ts) → the S3 code meaning the same; kinds not listed map by their status. */
const FROM_KODO: Partial<Record<ErrorKind, S3ErrorCode>> = {
  noSuchBucket: 'NoSuchBucket',
  noSuchBucketInfo: 'NoSuchBucket',
  notFound: 'NoSuchKey',
  noSuchEntry: 'NoSuchKey',
  keyTooLong: 'KeyTooLongError',
  badBucketName: 'InvalidBucketName',
  reservedBucketName: 'InvalidBucketName',
  bucketExists: 'BucketAlreadyExists',
  bucketExistsOwned: 'BucketAlreadyOwnedByYou',
  bucketNotEmpty: 'BucketNotEmpty',
  fileExists: 'PreconditionFailed',
  conditionFailed: 'PreconditionFailed',
  objectTooLarge: 'EntityTooLarge',
  fileTooLarge: 'EntityTooLarge',
  bodyTooLarge: 'EntityTooLarge',
  fileTooSmall: 'EntityTooSmall',
  rangeNotSatisfiable: 'InvalidRange',
  objectArchived: 'InvalidObjectState',
  quotaExceeded: 'QuotaExceeded',
  methodNotAllowed: 'MethodNotAllowed',
  noSuchUpload: 'NoSuchUpload',
  // A mirror source that failed (not 404) on a GetObject miss: the origin is unavailable, worth a client retry.
  originFailed: 'ServiceUnavailable',
  // A version protected by object lock (objects/retention.ts): AWS answers AccessDenied.
  objectLocked: 'AccessDenied',
};

/** The S3 error of a Kodo error: by kind when one is listed, else by status (4xx → InvalidArgument/AccessDenied…). */
export function fromKodoError(err: KodoError): S3Error {
  const code = FROM_KODO[err.kind];
  // The Kodo message's detail (after the catalogue text) says what failed: kept for the client.
  if (code) return new S3Error(code, err.message);
  if (err.status === 401 || err.status === 403) return new S3Error('AccessDenied', err.message);
  if (err.status === 404 || err.status === 612) return new S3Error('NoSuchKey', err.message);
  if (err.status === 413) return new S3Error('EntityTooLarge', err.message);
  if (err.status >= 400 && err.status < 500) return new S3Error('InvalidArgument', err.message);
  if (err.status === 599 && err.kind.startsWith('storage')) return new S3Error('ServiceUnavailable', err.message);
  return new S3Error('InternalError', err.message);
}

/**
 * The S3 error to answer for any failure: an S3Error as it is, a KodoError mapped (fromKodoError), a storage failure
 * (errno, SQLite, S3 or PostgreSQL codes) as its Kodo storage error mapped, anything else InternalError (whose
 * message names nothing of the server). How it is logged is log.ts `logAnswerError`'s rule, by the answer's status.
 */
export function toS3Error(err: unknown): { error: S3Error } {
  if (err instanceof S3Error) return { error: err };
  if (isKodoError(err)) return { error: fromKodoError(err) };
  const storage = storageError(err);
  if (storage) return { error: fromKodoError(storage) };
  const fw = err as { statusCode?: number; code?: string } | null;
  if (fw?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { error: S3Errors.EntityTooLarge() };
  if (typeof fw?.statusCode === 'number' && fw.statusCode >= 400 && fw.statusCode < 500) {
    return { error: S3Errors.InvalidRequest() };
  }
  return { error: S3Errors.InternalError() };
}

/** The catalogue as a list (docs and the unit test): code, status, message. */
export function s3Catalogue(): Array<{ code: S3ErrorCode; status: number; message: string }> {
  return (Object.entries(CATALOGUE) as [S3ErrorCode, Entry][]).map(([code, [status, message]]) => ({ code, status, message }));
}
