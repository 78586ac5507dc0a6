/**
 * The IAM action of each operation whose action depends on its arguments, in one place (docs/reference/iam.md,
 * "Actions of each door"): the rs ops (Kodo's op paths, also the ops of a batch and the console's file ops) and the
 * S3 actions (`s3:GetObject` …, what the S3 route table names and a bucket policy will name) → Kodo actions
 * (actions.ts), which the evaluator (evaluate.ts) decides on. Source of the Kodo names: Qiniu's Kodo IAM action
 * list (developer.qiniu.com/af/12495); of the S3 names: the AWS S3 API reference's "Permissions" of each operation
 * (docs.aws.amazon.com/AmazonS3/latest/userguide/using-with-s3-policy-actions.html).
 */

/** rs op name (`/stat/…`, `/move/…`) → Kodo action. Copy and move are checked on the source and on the target. */
export const RS_OP_ACTIONS: Readonly<Record<string, string>> = {
  stat: 'kodo/Stat',
  copy: 'kodo/Copy',
  move: 'kodo/Move',
  delete: 'kodo/Delete',
  chgm: 'kodo/Chgm',
  chtype: 'kodo/Chtype',
  chstatus: 'kodo/Chstatus',
  deleteAfterDays: 'kodo/ObjectLifecycleSet',
  lifecycle: 'kodo/ObjectLifecycleSet',
  restoreAr: 'kodo/Restorear',
};

/** The Kodo action of an rs op; undefined for an unknown op (the op's parser answers 400 for it). */
export function rsOpAction(op: string): string | undefined {
  return Object.hasOwn(RS_OP_ACTIONS, op) ? RS_OP_ACTIONS[op] : undefined;
}

/**
 * S3 action → Kodo action: the one table of the S3 door. An S3 route (s3api/routes.ts) names its S3 action; the
 * evaluator is asked the Kodo action on the request's bucket (and key). The names are AWS's own (the action each
 * operation requires: HeadBucket needs `s3:ListBucket`; CreateMultipartUpload, UploadPart and
 * CompleteMultipartUpload need `s3:PutObject`, so on this door they are `kodo/Upload`); bucket configuration (ACL,
 * tagging, CORS, lifecycle, policy, versioning, location) is `kodo/BucketSettings`.
 */
export const S3_ACTIONS: Readonly<Record<string, string>> = {
  's3:GetObject': 'kodo/Get',
  's3:GetObjectAttributes': 'kodo/Stat',
  's3:GetObjectAcl': 'kodo/Stat',
  's3:GetObjectTagging': 'kodo/Stat',
  's3:PutObjectTagging': 'kodo/Chgm',
  's3:DeleteObjectTagging': 'kodo/Chgm',
  's3:PutObject': 'kodo/Upload',
  's3:DeleteObject': 'kodo/Delete',
  's3:ListBucket': 'kodo/List',
  's3:ListBucketVersions': 'kodo/List',
  's3:ListBucketMultipartUploads': 'kodo/ListMultipartUploads',
  's3:ListMultipartUploadParts': 'kodo/ListParts',
  's3:AbortMultipartUpload': 'kodo/AbortMultipartUpload',
  's3:DeleteBucket': 'kodo/Drop',
  's3:GetBucketLocation': 'kodo/BucketSettings',
  's3:GetBucketAcl': 'kodo/BucketSettings',
  's3:PutBucketAcl': 'kodo/BucketSettings',
  's3:GetBucketTagging': 'kodo/BucketSettings',
  's3:PutBucketTagging': 'kodo/BucketSettings',
  's3:GetBucketPolicy': 'kodo/BucketSettings',
  's3:PutBucketPolicy': 'kodo/BucketSettings',
  's3:DeleteBucketPolicy': 'kodo/BucketSettings',
  's3:GetBucketPolicyStatus': 'kodo/BucketSettings',
  's3:GetBucketCORS': 'kodo/BucketSettings',
  's3:PutBucketCORS': 'kodo/BucketSettings',
  's3:GetLifecycleConfiguration': 'kodo/BucketSettings',
  's3:PutLifecycleConfiguration': 'kodo/BucketSettings',
  's3:GetBucketVersioning': 'kodo/BucketSettings',
  's3:PutBucketVersioning': 'kodo/BucketSettings',
  's3:GetBucketOwnershipControls': 'kodo/BucketSettings',
  's3:PutBucketOwnershipControls': 'kodo/BucketSettings',
  's3:GetEncryptionConfiguration': 'kodo/BucketSettings',
  's3:PutEncryptionConfiguration': 'kodo/BucketSettings',
  's3:GetReplicationConfiguration': 'kodo/BucketSettings',
  's3:PutReplicationConfiguration': 'kodo/BucketSettings',
  's3:GetBucketPublicAccessBlock': 'kodo/BucketSettings',
  's3:PutBucketPublicAccessBlock': 'kodo/BucketSettings',
  's3:PutObjectAcl': 'kodo/Chgm',
  // Object lock (s3api/ops/object-lock.ts; docs/reference/versioning.md).
  's3:GetBucketObjectLockConfiguration': 'kodo/BucketSettings',
  's3:PutBucketObjectLockConfiguration': 'kodo/BucketSettings',
  's3:GetObjectRetention': 'kodo/Stat',
  's3:GetObjectLegalHold': 'kodo/Stat',
  's3:PutObjectRetention': 'kodo/ObjectLock',
  's3:PutObjectLegalHold': 'kodo/ObjectLock',
  's3:BypassGovernanceRetention': 'kodo/BypassGovernanceRetention',
};

/** The Kodo action of an S3 action; undefined for one not in the table. */
export function kodoActionOfS3(s3Action: string): string | undefined {
  return Object.hasOwn(S3_ACTIONS, s3Action) ? S3_ACTIONS[s3Action] : undefined;
}
