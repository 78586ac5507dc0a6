/**
 * The IAM action catalogue: the actions a Kodo IAM policy may name (`<service>/<Action>`, e.g. `kodo/Get`), as the
 * actions API lists them (`GET /iam/v1/actions`) and policy validation (policy.ts) checks them.
 *
 * Source: Qiniu's "对象存储相关接口操作" (developer.qiniu.com/af/12495/kodo-iam-actions): the IAM service alias of
 * Kodo is `kodo`; actions are resource-level (granted per `qrn:kodo:::<bucket>/<key>` resource) or service-level
 * (granted for the whole service whatever the statement's resources). The names marked `granary` are Granary's own
 * for Kodo operations that part of Qiniu's list we could read does not name (documented in docs/reference/iam.md).
 */

/** Granularity: `resource` (per bucket/key) or `service` (the whole service). Kodo's `scope` 1 / 0. */
export type ActionScope = 'resource' | 'service';

export interface IamAction {
  /** Kodo's service alias. */
  service: string;
  /** The action's name within the service (`Get`); a policy names it `<service>/<name>`. */
  name: string;
  scope: ActionScope;
  /** What it allows (English). */
  description: string;
  /** Where the name comes from: Qiniu's published list, or Granary's own. */
  source: 'qiniu' | 'granary';
}

const K = (name: string, scope: ActionScope, description: string, source: IamAction['source'] = 'qiniu'): IamAction => ({
  service: 'kodo',
  name,
  scope,
  description,
  source,
});

/** Every Kodo action, in the order Qiniu lists them (Granary's after). */
export const KODO_ACTIONS: readonly IamAction[] = [
  K('Mkbucket', 'service', 'create a bucket'),
  K('Drop', 'service', 'delete a bucket'),
  K('Upload', 'resource', 'upload a file in one request (form upload, PUT)'),
  K('Mkfile', 'resource', 'upload a file in pieces (resumable v1/v2, multipart)'),
  K('Fetchfiles', 'resource', 'fetch a file from a URL into the bucket'),
  K('ListParts', 'resource', 'list the uploaded parts of a multipart upload'),
  K('AbortMultipartUpload', 'resource', 'abort a multipart upload'),
  K('ListMultipartUploads', 'resource', 'list the multipart uploads of a bucket'),
  K('List', 'resource', 'list the files of a bucket'),
  K('Stat', 'resource', "read a file's metadata"),
  K('Move', 'resource', 'move or rename a file'),
  K('Copy', 'resource', 'copy a file'),
  K('Get', 'resource', 'download a file'),
  K('Chgm', 'resource', "change a file's MIME type and metadata"),
  K('ObjectLifecycleSet', 'resource', "set a file's lifecycle (deleteAfterDays and transitions)"),
  K('Chtype', 'resource', "change a file's storage class"),
  K('Delete', 'resource', 'delete a file'),
  K('Chstatus', 'resource', "enable or disable a file's downloads", 'granary'),
  K('Restorear', 'resource', 'restore an archived file', 'granary'),
  K('Prefetch', 'resource', 'refresh a file from the bucket mirror source', 'granary'),
  K('Pfop', 'resource', 'run persistent processing on a file', 'granary'),
  K('BucketSettings', 'resource', "read or change a bucket's settings (domains, CORS, lifecycle, events, quota, tags)", 'granary'),
  K('ObjectLock', 'resource', "set an object version's retention and legal hold (S3 Object Lock)", 'granary'),
  K('BypassGovernanceRetention', 'resource', 'shorten, remove or delete through GOVERNANCE retention (S3 x-amz-bypass-governance-retention)', 'granary'),
];

/** The services an action may name: Kodo's is enforced by Granary; others are stored and listed, never evaluated to a grant. */
export const SERVICES: readonly string[] = ['kodo'];

const BY_NAME = new Map(KODO_ACTIONS.map((a) => [`${a.service}/${a.name}`.toLowerCase(), a]));

/** The catalogue entry of `kodo/<Name>` (case-insensitive), or undefined. */
export function kodoAction(action: string): IamAction | undefined {
  return BY_NAME.get(action.toLowerCase());
}
