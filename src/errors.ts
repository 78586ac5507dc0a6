/**
 * The error catalogue: every Kodo error Granary answers with, declared once with its HTTP status and message
 * (protocol.md §8.7, §4.2, §15). Code below the route layer throws `KodoError`s built here; one handler in
 * server.ts turns them into `{"error": "<message>"}` with the status.
 */

/** An error that maps to a Kodo status code and a JSON `{"error": message}` body. */
export class KodoError extends Error {
  /** HTTP status sent to the client (Kodo uses non-standard codes such as 579, 612, 614, 631, 701). */
  readonly status: number;
  /** Stable machine name of the catalogue entry (for logs and tests). */
  readonly kind: string;

  constructor(kind: string, status: number, message: string) {
    super(message);
    this.name = 'KodoError';
    this.kind = kind;
    this.status = status;
  }
}

type Detail = string | undefined;

/** Builds a catalogue entry: `status`, a fixed message, and an optional detail appended after `: `. */
function entry(kind: string, status: number, message: string): (detail?: Detail) => KodoError {
  return (detail?: Detail) => new KodoError(kind, status, detail ? `${message}: ${detail}` : message);
}

/** Every error Granary answers with. Status codes from protocol.md §8.7; messages from §4.2 and §15. */
export const Errors = {
  // 400 — malformed request
  badRequest: entry('badRequest', 400, 'invalid argument'),
  badBase64: entry('badBase64', 400, 'invalid base64 encoding'),
  badEntry: entry('badEntry', 400, 'invalid EncodedEntryURI'),
  badMultipart: entry('badMultipart', 400, 'invalid multipart body'),
  noFilePart: entry('noFilePart', 400, 'file is not specified in multipart'),
  badCrc32: entry('badCrc32', 400, 'invalid crc32'),
  badPutPolicy: entry('badPutPolicy', 400, 'invalid put policy'),
  keyTooLong: entry('keyTooLong', 400, 'key too long'),
  badBucketName: entry('badBucketName', 400, 'invalid bucket name'),
  reservedBucketName: entry('reservedBucketName', 400, 'bucket name is reserved'),
  badDomain: entry('badDomain', 400, 'invalid domain'),
  bodyTooLarge: entry('bodyTooLarge', 413, 'request body too large'),
  // 401 — authentication
  tokenMissing: entry('tokenMissing', 401, 'token not specified'),
  badToken: entry('badToken', 401, 'bad token'),
  expiredToken: entry('expiredToken', 401, 'expired token'),
  unknownAccessKey: entry('unknownAccessKey', 401, 'bad token: unknown access key'),
  badDownloadToken: entry('badDownloadToken', 401, 'bad token'),
  downloadTokenExpired: entry('downloadTokenExpired', 401, 'token out of date'),
  badSaveasSign: entry('badSaveasSign', 401, 'bad saveas sign'),
  // 403 — forbidden
  staleDate: entry('staleDate', 403, 'X-Qiniu-Date is out of the allowed time window'),
  scopeMismatch: entry('scopeMismatch', 403, "key doesn't match with scope"),
  fileTooSmall: entry('fileTooSmall', 403, 'file is smaller than fsizeMin'),
  limitedMimeType: entry('limitedMimeType', 403, 'limited mimeType'),
  keyNotAllowed: entry('keyNotAllowed', 403, 'key is not in keylimit'),
  forbidden: entry('forbidden', 403, 'forbidden'),
  objectDisabled: entry('objectDisabled', 403, 'the object is disabled'),
  // 404, 405, 406, 413, 416
  notFound: entry('notFound', 404, 'Document not found'),
  noSuchRoute: entry('noSuchRoute', 404, 'no such api'),
  methodNotAllowed: entry('methodNotAllowed', 405, 'method not allowed'),
  crc32Mismatch: entry('crc32Mismatch', 406, 'crc32 not match'),
  fileTooLarge: entry('fileTooLarge', 413, 'file exceeds fsizeLimit'),
  objectTooLarge: entry('objectTooLarge', 413, 'file exceeds the server object size limit'),
  rangeNotSatisfiable: entry('rangeNotSatisfiable', 416, 'requested range not satisfiable'),
  // 5xx / 6xx — Kodo specific
  callbackFailed: entry('callbackFailed', 579, 'callback failed'),
  internal: entry('internal', 599, 'internal error'),
  noSuchEntry: entry('noSuchEntry', 612, 'no such file or directory'),
  fileExists: entry('fileExists', 614, 'file exists'),
  bucketExists: entry('bucketExists', 614, 'bucket exists'),
  tooManyBuckets: entry('tooManyBuckets', 630, 'too many buckets'),
  noSuchBucket: entry('noSuchBucket', 631, 'no such bucket'),
  bucketNotEmpty: entry('bucketNotEmpty', 400, 'bucket is not empty'),
  conditionFailed: entry('conditionFailed', 608, 'resource content changed'),
  badMarker: entry('badMarker', 640, 'invalid marker'),
  tooManyOps: entry('tooManyOps', 400, 'too many operations in a batch'),
  unknownOp: entry('unknownOp', 400, 'unknown operation'),
  invalidCtx: entry('invalidCtx', 701, 'invalid ctx: expired, altered, or not the latest ctx of its block'),
  badBlock: entry('badBlock', 400, 'invalid block'),
  noSuchUpload: entry('noSuchUpload', 612, 'no such uploadId'),
  noSuchTask: entry('noSuchTask', 612, 'no such task'),
  badPartList: entry('badPartList', 400, 'invalid part list'),
  md5Mismatch: entry('md5Mismatch', 400, 'Content-MD5 does not match the part'),
  badFetchUrl: entry('badFetchUrl', 400, 'invalid source URL'),
  outboundRefused: entry('outboundRefused', 403, 'refused by the outbound guard'),
  originNotFound: entry('originNotFound', 404, 'the origin answered 404'),
  originTooLarge: entry('originTooLarge', 413, 'the origin body exceeds the fetch size limit'),
  originFailed: entry('originFailed', 478, 'fetching from the origin failed'),
  originTimeout: entry('originTimeout', 504, 'the origin did not answer in time'),
  fetchDigestMismatch: entry('fetchDigestMismatch', 406, 'the fetched content does not match the given md5/etag'),
  noMirrorSource: entry('noMirrorSource', 400, 'the bucket has no mirror source (set one with image)'),
  badMirrorHost: entry('badMirrorHost', 400, 'invalid mirror source host'),
  unsupportedImage: entry('unsupportedImage', 415, 'unsupported image format'),
  imageTooLarge: entry('imageTooLarge', 400, 'image exceeds the processing limits'),
  fopFailed: entry('fopFailed', 400, 'image processing failed'),
  notArchived: entry('notArchived', 400, 'the object is not in an archive storage class'),
  noExif: entry('noExif', 400, 'no EXIF data'),
  nropDisabled: entry('nropDisabled', 403, 'nrop is not enabled for the bucket'),
  modelFailed: entry('modelFailed', 599, 'the moderation model failed'),
  videoToolMissing: entry('videoToolMissing', 415, 'a program this command needs is not installed'),
  videoFailed: entry('videoFailed', 400, 'audio/video processing failed'),
  videoTooLarge: entry('videoTooLarge', 400, 'the source exceeds the audio/video processing limits'),
  badPersistentId: entry('badPersistentId', 400, 'invalid persistentId'),
  noSuchJob: entry('noSuchJob', 612, 'no such persistentId'),
  badFops: entry('badFops', 400, 'invalid fops'),
  badPipelineName: entry('badPipelineName', 400, 'invalid pipeline name'),
  unknownPipeline: entry('unknownPipeline', 400, 'no such pipeline'),
  unsupportedWorkflow: entry('unsupportedWorkflow', 400, 'workflowTemplateID is not supported, send fops'),
  objectArchived: entry('objectArchived', 403, 'the object is in archive storage: restore it with restoreAr before reading it'),
  // Storage failures (the 599 family): the message names the problem, never a server path (the log has it).
  storageFull: entry('storageFull', 599, 'storage full: no space left on the data disk'),
  storageReadOnly: entry('storageReadOnly', 599, 'storage is read-only'),
  storageDenied: entry('storageDenied', 599, 'storage permission denied: the data directory is not writable by the server'),
  storageIo: entry('storageIo', 599, 'storage I/O error'),
  objectCorrupt: entry('objectCorrupt', 599, 'the stored bytes of this object are corrupt (checksum mismatch); re-upload it'),
} as const;

/**
 * Errors of the file system (errno codes) and of SQLite (result codes) that mean the storage itself failed,
 * mapped to the storage entries of the catalogue. Anything else is not a storage failure (undefined).
 */
const STORAGE_CODES: ReadonlyArray<[RegExp, (detail?: Detail) => KodoError]> = [
  [/^(ENOSPC|EDQUOT|SQLITE_FULL)$/, Errors.storageFull],
  [/^(EROFS|SQLITE_READONLY(_\w+)?)$/, Errors.storageReadOnly],
  [/^(EACCES|EPERM|SQLITE_PERM|SQLITE_AUTH|SQLITE_CANTOPEN(_\w+)?)$/, Errors.storageDenied],
  [/^(EIO|ENXIO|EUCLEAN|EBADMSG|SQLITE_IOERR(_\w+)?|SQLITE_CORRUPT(_\w+)?|SQLITE_NOTADB)$/, Errors.storageIo],
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

/** Narrows an unknown thrown value to a KodoError. */
export function isKodoError(err: unknown): err is KodoError {
  return err instanceof KodoError;
}
