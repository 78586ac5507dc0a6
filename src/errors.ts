/**
 * The error catalogue: every Kodo error Granary answers with, declared once with its HTTP status and message
 * (docs/development/kodo-protocol.md §8.7, §4.2, §15). Code below the route layer throws `KodoError`s built here; one handler in
 * server.ts turns them into `{"error": "<message>"}` with the status (and the error's headers, if any).
 *
 * The catalogue is one table keyed by kind; the factories in `Errors` are derived from it, so an error's `kind`
 * is always its key and `ErrorKind` (the union of the keys) lets the compiler reject a misspelt kind.
 * test/unit/errors.test.ts checks the table: allowed statuses, non-empty messages, no unused entries.
 */

/** One catalogue entry: the HTTP status (Kodo's code) and the fixed message of the `{"error": …}` body. */
type Entry = readonly [status: number, message: string];

/** Every error Granary answers with. Status codes from docs/development/kodo-protocol.md §8.7; messages from §4.2 and §15. */
const CATALOGUE = {
  // 400 — malformed request
  badRequest: [400, 'invalid argument'],
  badBase64: [400, 'invalid base64 encoding'],
  badEntry: [400, 'invalid EncodedEntryURI'],
  badMultipart: [400, 'invalid multipart body'],
  noFilePart: [400, 'file is not specified in multipart'],
  badCrc32: [400, 'invalid crc32'],
  badPutPolicy: [400, 'invalid put policy'],
  keyTooLong: [400, 'key too long'],
  badBucketName: [400, 'invalid bucket name'],
  reservedBucketName: [400, 'bucket name is reserved'],
  badDomain: [400, 'invalid domain'],
  bodyTooLarge: [413, 'request body too large'],
  // 401 — authentication
  tokenMissing: [401, 'token not specified'],
  badToken: [401, 'bad token'],
  expiredToken: [401, 'expired token'],
  unknownAccessKey: [401, 'bad token: unknown access key'],
  badDownloadToken: [401, 'bad token'],
  downloadTokenExpired: [401, 'token out of date'],
  badSaveasSign: [401, 'bad saveas sign'],
  // 403 — forbidden
  staleDate: [403, 'X-Qiniu-Date is out of the allowed time window'],
  scopeMismatch: [403, "key doesn't match with scope"],
  // Kodo's text, read by the Java SDK's tests.
  fileTooSmall: [403, 'request entity size is smaller than FsizeMin'],
  limitedMimeType: [403, 'limited mimeType'],
  keyNotAllowed: [403, 'key is not in keylimit'],
  forbidden: [403, 'forbidden'],
  objectDisabled: [403, 'the object is disabled'],
  // Object lock (ports/object-lock.ts, objects/retention.ts): a version under retention or a legal hold cannot be
  // destroyed (nor its retention lessened); the detail names the mode and the retain-until date. S3: AccessDenied.
  objectLocked: [403, 'object locked'],
  // A commit that would take a bucket past its setbucketquota limits (buckets/quota.ts): refused, nothing stored.
  quotaExceeded: [403, 'bucket quota exceeded'],
  // 404, 406, 413, 414, 416
  notFound: [404, 'Document not found'],
  noSuchRoute: [404, 'no such api'],
  // A path that exists for other methods (Kodo: 405); sent with `Allow` (roles/allowed-methods.ts).
  methodNotAllowed: [405, 'method not allowed'],
  crc32Mismatch: [406, 'crc32 not match'],
  fileTooLarge: [413, 'file exceeds fsizeLimit'],
  objectTooLarge: [413, 'file exceeds the server object size limit'],
  uriTooLong: [414, 'request URI too long'],
  rangeNotSatisfiable: [416, 'requested range not satisfiable'],
  // 5xx / 6xx — Kodo specific
  callbackFailed: [579, 'callback failed'],
  internal: [599, 'internal error'],
  // IAM data could not be read (auth/key-index.ts): a sub-user's request is refused, never allowed (fail closed).
  iamUnavailable: [503, 'IAM policies are unavailable; try again'],
  noSuchEntry: [612, 'no such file or directory'],
  fileExists: [614, 'file exists'],
  bucketExists: [614, 'bucket exists'],
  // mkbucketv3 of a bucket the caller already owns: Kodo's text, which the Go SDK's tests compare.
  bucketExistsOwned: [614, 'the bucket already exists and you own it.'],
  noSuchBucket: [631, 'no such bucket'],
  // v2/bucketInfo of a bucket that does not exist: Kodo answers 612 there (the Java and Go SDKs' tests expect it).
  noSuchBucketInfo: [612, 'no such bucket'],
  bucketNotEmpty: [400, 'bucket is not empty'],
  conditionFailed: [608, 'resource content changed'],
  // chgm whose `cond` does not hold: Kodo answers 613 there (the Java SDK's BucketTest2.testBatchCopyChgmDelete,
  // single op and batch); the other ops with a `cond` keep 608.
  chgmConditionFailed: [613, 'condition not met'],
  // delete of an EncodedEntryURI that names only a bucket (no `:`): Kodo answers 631 there, for a bucket that
  // exists or not (the Java SDK's BucketTest.testDelete, BucketTest2.testDelete).
  noKeyInDelete: [631, 'no such bucket'],
  badMarker: [640, 'invalid marker'],
  tooManyOps: [400, 'too many operations in a batch'],
  unknownOp: [400, 'unknown operation'],
  invalidCtx: [701, 'invalid ctx: expired, altered, or not the latest ctx of its block'],
  badBlock: [400, 'invalid block'],
  noSuchUpload: [612, 'no such uploadId'],
  noSuchTask: [612, 'no such task'],
  badPartList: [400, 'invalid part list'],
  md5Mismatch: [400, 'Content-MD5 does not match the part'],
  badFetchUrl: [400, 'invalid source URL'],
  outboundRefused: [403, 'refused by the outbound guard'],
  originNotFound: [404, 'the origin answered 404'],
  originTooLarge: [413, 'the origin body exceeds the fetch size limit'],
  originFailed: [478, 'fetching from the origin failed'],
  originTimeout: [504, 'the origin did not answer in time'],
  fetchDigestMismatch: [406, 'the fetched content does not match the given md5/etag'],
  noMirrorSource: [400, 'the bucket has no mirror source (set one with image)'],
  badMirrorHost: [400, 'invalid mirror source host'],
  unsupportedImage: [415, 'unsupported image format'],
  imageTooLarge: [400, 'image exceeds the processing limits'],
  fopFailed: [400, 'image processing failed'],
  notArchived: [400, 'the object is not in an archive storage class'],
  noExif: [400, 'no EXIF data'],
  nropDisabled: [403, 'nrop is not enabled for the bucket'],
  modelFailed: [599, 'the moderation model failed'],
  videoToolMissing: [415, 'a program this command needs is not installed'],
  videoFailed: [400, 'audio/video processing failed'],
  videoTooLarge: [400, 'the source exceeds the audio/video processing limits'],
  badPersistentId: [400, 'invalid persistentId'],
  noSuchJob: [612, 'no such persistentId'],
  badFops: [400, 'invalid fops'],
  badPipelineName: [400, 'invalid pipeline name'],
  unknownPipeline: [400, 'no such pipeline'],
  badWorkflowTemplateName: [400, 'invalid workflow template name'],
  unknownWorkflowTemplate: [400, 'no such workflow template'],
  noSuchWorkflowTemplate: [612, 'no such workflow template'],
  fopsWithWorkflow: [400, 'fops and a workflow template exclude each other'],
  // The region query for an AccessKey that does not exist (Kodo's answer; the SDKs match its text).
  unknownQueryAccessKey: [612, 'app/accesskey is not found'],
  // Bucket settings on downloads (buckets/referer.ts, cors.ts, protection.ts)
  badRefererSettings: [400, 'invalid referer anti-leech setting'],
  badCorsRules: [400, 'invalid CORS rules'],
  refererRefused: [403, "forbidden by the bucket's referer anti-leech rules"],
  corsRefused: [403, "CORS request not allowed by the bucket's CORS rules"],
  originalProtected: [403, 'the bucket protects its originals: ask for a style (<key><sep><style> or ?style/<name>) or use a signed URL'],
  // Bucket event notifications (events/rules.ts)
  // Kodo's texts, which the Go SDK's tests look for ("event name exists", "rule name exists"); 400 as the Java
  // SDK's tests expect for a taken name.
  eventRuleExists: [400, 'event name exists'],
  noSuchEventRule: [612, 'no such event rule'],
  // events/update of a name the bucket has no rule of: Kodo answers 400 there (the Java and Go SDKs' tests).
  noEventRuleToUpdate: [400, 'no such event rule'],
  // Bucket lifecycle rules (rules/add|update|delete): a taken name or prefix and an update of an unknown name are 400
  // (the Java SDK's testBucketLifeCycleRule), a delete of an unknown name 612.
  badLifecycleRule: [400, 'invalid lifecycle rule'],
  lifecyclePrefixTaken: [400, 'another lifecycle rule of the bucket has this prefix'],
  tooManyLifecycleRules: [400, 'too many lifecycle rules in the bucket'],
  lifecycleRuleExists: [400, 'rule name exists'],
  noSuchLifecycleRule: [612, 'no such lifecycle rule'],
  // rules/update of a name the bucket has no rule of: Kodo answers 400 there (the Java and Go SDKs' tests).
  noLifecycleRuleToUpdate: [400, 'no such lifecycle rule'],
  // Bucket tags, remark and index-page flag (bucketTagging, buckets/tagging.ts; remark and noIndexPage,
  // buckets/bucket-notes.ts).
  badBucketTagging: [400, 'invalid bucket tagging'],
  badBucketRemark: [400, 'invalid bucket remark'],
  // Kodo IAM (/iam/v1/…, roles/api/iam/): Kodo's IAM error texts are not public; the statuses follow Kodo's
  // families (400 bad argument, 612 no such, 614 exists), the message names the object.
  badIamPolicy: [400, 'invalid IAM policy'],
  badIamAlias: [400, 'invalid IAM alias'],
  noSuchIamUser: [612, 'no such IAM user'],
  noSuchIamGroup: [612, 'no such IAM group'],
  noSuchIamPolicy: [612, 'no such IAM policy'],
  noSuchIamKeyPair: [612, 'no such IAM key pair'],
  iamUserExists: [614, 'IAM user exists'],
  iamGroupExists: [614, 'IAM group exists'],
  iamPolicyExists: [614, 'IAM policy exists'],
  // The web console's own API (src/console): sign-in, sessions, CSRF.
  consoleSignInFailed: [401, 'wrong AccessKey or SecretKey'],
  consoleNoSession: [401, 'not signed in, or the session has ended: sign in again'],
  consoleCsrf: [403, 'cross-site request refused: missing or wrong CSRF token, or a foreign Origin'],
  // Two session cookies in one request: one may have been planted by a page on another port of the same host.
  consoleCookieConflict: [400, 'more than one console session cookie was sent: clear the cookies of this site and sign in again'],
  // Kodo's 573 "too many requests": sign-in attempts for one AccessKey from one address past the limit.
  consoleSignInThrottled: [573, 'too many failed sign-ins for this AccessKey: wait a minute and try again'],
  // Storage failures (the 599 family): the message names the problem, never a server path (the log has it).
  objectArchived: [403, 'the object is in archive storage: restore it with restoreAr before reading it'],
  objectCustomerKey: [403, 'the object is encrypted with a customer-provided key (S3 SSE-C): only an S3 request giving that key reads it; processing commands cannot'],
  objectCorrupt: [599, 'the stored bytes of this object are corrupt (checksum mismatch); re-upload it'],
  storageFull: [599, 'storage full: no space left on the data disk'],
  storageReadOnly: [599, 'storage is read-only'],
  storageDenied: [599, 'storage permission denied: the data directory is not writable by the server'],
  storageIo: [599, 'storage I/O error'],
  storageRemote: [599, 'the object store (S3) failed or did not answer'],
  metadataRemote: [599, 'the metadata database (PostgreSQL) failed or did not answer'],
} as const satisfies Record<string, Entry>;

/** A detail appended to an entry's message after `: ` (what failed, which parameter, …). */
type Detail = string | undefined;

/** Builds the error of one catalogue entry, with an optional detail appended to its message. */
export type ErrorFactory<K extends ErrorKind> = (detail?: Detail) => KodoError<K>;

type Factories = { readonly [K in keyof typeof CATALOGUE]: ErrorFactory<K> };

/** The factories of the catalogue: `Errors.noSuchBucket('b')` is a 631 `no such bucket: b`. */
export const Errors: Factories = buildFactories();

/** The name of a catalogue entry (a key of `Errors`): `'badRequest' | 'noSuchBucket' | …`. */
export type ErrorKind = keyof typeof Errors;

/**
 * An error that maps to a Kodo status code and a JSON `{"error": message}` body, plus optional response headers.
 * Built by the factories of `Errors` (never directly), so its kind, status and message come from one entry.
 */
export class KodoError<K extends ErrorKind = ErrorKind> extends Error {
  /** HTTP status sent to the client (Kodo uses non-standard codes such as 579, 612, 614, 631, 701). */
  readonly status: number;
  /** The catalogue entry this error was built from (for logs, tests and `isKodoError(err, kind)`). */
  readonly kind: K;
  /** Response headers sent with the error (a 416's `Content-Range` naming the object size); undefined when none. */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(kind: K, status: number, message: string, headers?: Readonly<Record<string, string>>) {
    super(message);
    this.name = 'KodoError';
    this.kind = kind;
    this.status = status;
    this.headers = headers;
  }

  /** The same error with `headers` (lower-case names) added to the ones it carries; the receiver is unchanged. */
  withHeaders(headers: Readonly<Record<string, string>>): KodoError<K> {
    return new KodoError(this.kind, this.status, this.message, { ...this.headers, ...headers });
  }
}

/** One factory per catalogue entry; each passes its own key as the kind, so a kind cannot differ from its key. */
function buildFactories(): Factories {
  const out: Record<string, ErrorFactory<ErrorKind>> = {};
  for (const [kind, [status, message]] of Object.entries(CATALOGUE) as [ErrorKind, Entry][]) {
    out[kind] = (detail?: Detail) => new KodoError(kind, status, detail ? `${message}: ${detail}` : message);
  }
  return Object.freeze(out) as Factories;
}

/**
 * Errors of the file system (errno codes), of SQLite (result codes), of the S3 BlobStore (`S3_…` codes) and of the
 * PostgreSQL MetaStore (`PG_…` codes) that mean the storage itself failed, mapped to the storage entries of the
 * catalogue. Anything else is not a storage failure (undefined).
 */
const STORAGE_CODES: ReadonlyArray<[RegExp, ErrorFactory<ErrorKind>]> = [
  [/^(ENOSPC|EDQUOT|SQLITE_FULL|S3_QuotaExceeded)$/, Errors.storageFull],
  [/^(EROFS|SQLITE_READONLY(_\w+)?)$/, Errors.storageReadOnly],
  [/^(EACCES|EPERM|SQLITE_PERM|SQLITE_AUTH|SQLITE_CANTOPEN(_\w+)?)$/, Errors.storageDenied],
  [/^(EIO|ENXIO|EUCLEAN|EBADMSG|SQLITE_IOERR(_\w+)?|SQLITE_CORRUPT(_\w+)?|SQLITE_NOTADB)$/, Errors.storageIo],
  // Any other failure of the S3 BlobStore (store/s3/s3-errors.ts: `S3_<S3 error code or errno>`).
  [/^S3_\w+$/, Errors.storageRemote],
  // The PostgreSQL MetaStore's database failed or is unreachable (store/postgres/pg-errors.ts: `PG_<reason>`).
  [/^PG_\w+$/, Errors.metadataRemote],
];

/**
 * The catalogue error for a failed storage call (`err.code` an errno such as ENOSPC/EDQUOT/EROFS/EACCES/EIO, or
 * an SQLite result code such as SQLITE_FULL), with `detail` saying what was being done; undefined when `err` is
 * not a storage failure. The original error (which names paths) is for the log only.
 */
export function storageError(err: unknown, detail?: string): KodoError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  for (const [re, make] of STORAGE_CODES) if (re.test(code)) return make(detail ? `${detail} (${code})` : code);
  return undefined;
}

/**
 * Narrows an unknown thrown value to a KodoError; with `kinds`, to an error of one of those entries
 * (`isKodoError(err, 'fileExists')`: a misspelt kind does not compile).
 */
export function isKodoError<K extends ErrorKind = ErrorKind>(err: unknown, ...kinds: K[]): err is KodoError<K> {
  return err instanceof KodoError && (kinds.length === 0 || (kinds as ErrorKind[]).includes(err.kind));
}

/**
 * The catalogue error to report for any failure (job items, async-fetch results): a KodoError as it is, a storage
 * failure as its 599 entry, anything else as 599 `internal` — with the error's message only when it is not a
 * system error (errno messages name server paths).
 */
export function toKodoError(err: unknown): KodoError {
  if (isKodoError(err)) return err;
  const storage = storageError(err);
  if (storage) return storage;
  const isSystem = typeof (err as { code?: unknown } | null)?.code === 'string';
  return Errors.internal(isSystem || !(err instanceof Error) ? undefined : err.message);
}
