/**
 * S3 Object Lock (docs/reference/versioning.md "Object lock") through real clients: a bucket created with object
 * lock (versioning Enabled, never Suspended), its configuration (default retention, malformed documents, a bucket
 * without lock), retention and legal hold per version, the lock headers on PUT, multipart and copy and on GET/HEAD,
 * the default retention applied, deletes of locked versions refused (COMPLIANCE even for the root key; GOVERNANCE
 * bypassed by the root key, refused for a sub-user without `kodo/BypassGovernanceRetention`), expiry through the test
 * clock — through the AWS SDK v3, boto3 and the Kodo door (qiniu SDK).
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectLockConfigurationCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectLockConfigurationCommand,
  PutObjectRetentionCommand,
  UploadPartCommand,
  GetBucketVersioningCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { boto3 } from '../helpers/boto3.js';
import { iamCall } from '../helpers/iam.js';
import { payloadHash, rawRequest, s3Client, signV4, type RawAnswer } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

let s: TestServer;
let s3: S3Client;
/** A sub-user allowed everything on the lock buckets but `kodo/BypassGovernanceRetention`. */
let sub: S3Client;
let subKey: { ak: string; sk: string };

const DAY = 86_400_000;
const ROOT = { accessKey: AK, secretKey: SK };

beforeAll(async () => {
  s = await startTestServer({ GRANARY_CONSOLE_PORT: '0' });
  s3 = s3Client(s.s3Url!, AK, SK);
  const iam = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const a = await iamCall(s, ROOT, method, `/iam/v1${path}`, body);
    expect(a.status, a.text).toBe(200);
    return ((a.json as { data?: Record<string, unknown> } | null)?.data ?? {}) as Record<string, unknown>;
  };
  await iam('POST', '/policies', {
    alias: 'no-bypass',
    description: 'everything but the bypass',
    edit_type: 1,
    statement: [{ action: ['kodo/*'], resource: ['qrn:kodo:::*'], effect: 'Allow' }, { action: ['kodo/BypassGovernanceRetention'], resource: ['qrn:kodo:::*'], effect: 'Deny' }],
  });
  await iam('POST', '/users', { alias: 'worker', password: 'correct-horse' });
  await iam('POST', '/users/worker/policies', { policy_aliases: ['no-bypass'] });
  const key = await iam('POST', '/users/worker/keypairs');
  subKey = { ak: key.access_key as string, sk: key.secret_key as string };
  sub = s3Client(s.s3Url!, subKey.ak, subKey.sk);
}, 60_000);

afterAll(async () => {
  s3?.destroy();
  sub?.destroy();
  await s?.stop();
});

/** One signed request with exactly this path (and query), headers and body. */
async function raw(method: string, path: string, body = '', extra: Record<string, string> = {}): Promise<RawAnswer> {
  const signed = signV4({ method, path, host: new URL(s.s3Url!).host, payloadHash: payloadHash(body), ak: AK, sk: SK, headers: extra });
  return rawRequest(s.s3Url!, method, path, { ...signed.headers, ...extra }, body);
}

async function lockBucket(name: string): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: name, ObjectLockEnabledForBucket: true }));
}

const future = (days: number): Date => new Date(s.clock.nowMs() + days * DAY);

async function put(bucket: string, key: string, body = 'data', extra: Partial<ConstructorParameters<typeof PutObjectCommand>[0]> = {}): Promise<string> {
  const out = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...extra }));
  return out.VersionId!;
}

async function refusal(p: Promise<unknown>): Promise<{ code: string | undefined; message: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err, 'expected a refusal').toBeDefined();
  return { code: (err as { name?: string }).name, message: err!.message };
}

describe('bucket object lock configuration', () => {
  it('a bucket created with object lock is versioned for good; its default retention is set, read and refused when malformed', async () => {
    const b = 'lock-conf';
    await lockBucket(b);
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: b }))).Status).toBe('Enabled');
    const suspended = await refusal(s3.send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Suspended' } })));
    expect(suspended.code).toBe('InvalidBucketState');
    expect((await s3.send(new GetObjectLockConfigurationCommand({ Bucket: b }))).ObjectLockConfiguration).toEqual({ ObjectLockEnabled: 'Enabled' });
    await s3.send(new PutObjectLockConfigurationCommand({ Bucket: b, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled', Rule: { DefaultRetention: { Mode: 'GOVERNANCE', Days: 3 } } } }));
    expect((await s3.send(new GetObjectLockConfigurationCommand({ Bucket: b }))).ObjectLockConfiguration).toEqual({
      ObjectLockEnabled: 'Enabled',
      Rule: { DefaultRetention: { Mode: 'GOVERNANCE', Days: 3 } },
    });
    const both = '<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>1</Days><Years>1</Years></DefaultRetention></Rule></ObjectLockConfiguration>';
    for (const body of [both, '<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>', '<nope/>', 'not xml']) {
      const a = await raw('PUT', `/${b}?object-lock`, body);
      expect([a.status, /<Code>([^<]+)/.exec(a.body)?.[1]], body).toEqual([400, 'MalformedXML']);
    }
    // The configuration is unchanged by the refusals.
    expect((await s3.send(new GetObjectLockConfigurationCommand({ Bucket: b }))).ObjectLockConfiguration?.Rule?.DefaultRetention).toEqual({ Mode: 'GOVERNANCE', Days: 3 });
  });

  it('a bucket created without object lock: InvalidBucketState to configure, ObjectLockConfigurationNotFoundError to read, InvalidRequest for lock headers', async () => {
    const b = 'lock-none';
    await createBucket(s, b);
    const put1 = await refusal(s3.send(new PutObjectLockConfigurationCommand({ Bucket: b, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } })));
    expect(put1.code).toBe('InvalidBucketState');
    expect((await refusal(s3.send(new GetObjectLockConfigurationCommand({ Bucket: b })))).code).toBe('ObjectLockConfigurationNotFoundError');
    const withHeaders = await refusal(put(b, 'k', 'x', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: future(1) }));
    expect(withHeaders.code).toBe('InvalidRequest');
    await put(b, 'k');
    expect((await refusal(s3.send(new GetObjectRetentionCommand({ Bucket: b, Key: 'k' })))).code).toBe('InvalidRequest');
  });
});

describe('retention and legal hold of versions', () => {
  it('retention set and read per version; extended freely; COMPLIANCE never shortened, removed or deleted — root key included', async () => {
    const b = 'lock-compliance';
    await lockBucket(b);
    const v1 = await put(b, 'doc', 'one');
    const v2 = await put(b, 'doc', 'two');
    expect((await refusal(s3.send(new GetObjectRetentionCommand({ Bucket: b, Key: 'doc', VersionId: v1 })))).code).toBe('NoSuchObjectLockConfiguration');
    const until = future(10);
    await s3.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'doc', VersionId: v1, Retention: { Mode: 'COMPLIANCE', RetainUntilDate: until } }));
    const got = await s3.send(new GetObjectRetentionCommand({ Bucket: b, Key: 'doc', VersionId: v1 }));
    expect(got.Retention).toEqual({ Mode: 'COMPLIANCE', RetainUntilDate: until });
    // The current version has none of it.
    expect((await refusal(s3.send(new GetObjectRetentionCommand({ Bucket: b, Key: 'doc' })))).code).toBe('NoSuchObjectLockConfiguration');
    // A date in the past: InvalidArgument.
    const past = await refusal(s3.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'doc', VersionId: v1, Retention: { Mode: 'COMPLIANCE', RetainUntilDate: new Date(s.clock.nowMs() - DAY) } })));
    expect(past.code).toBe('InvalidArgument');
    // Shortening, downgrading, removing: AccessDenied naming the date, bypass or not.
    const longer = future(20);
    await s3.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'doc', VersionId: v1, Retention: { Mode: 'COMPLIANCE', RetainUntilDate: longer } }));
    for (const retention of [{ Mode: 'COMPLIANCE' as const, RetainUntilDate: future(5) }, { Mode: 'GOVERNANCE' as const, RetainUntilDate: future(30) }, {}]) {
      const r = await refusal(s3.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'doc', VersionId: v1, Retention: retention, BypassGovernanceRetention: true })));
      expect(r.code).toBe('AccessDenied');
      expect(r.message).toContain(longer.toISOString());
    }
    // Deleting the version: refused for the root key, with the bypass too; one DeleteObjects item likewise.
    const del = await refusal(s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'doc', VersionId: v1, BypassGovernanceRetention: true })));
    expect(del.code).toBe('AccessDenied');
    expect(del.message).toContain(`COMPLIANCE retention until ${longer.toISOString()}`);
    const many = await s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: 'doc', VersionId: v1 }, { Key: 'doc', VersionId: v2 }] } }));
    expect(many.Errors?.map((e) => [e.VersionId, e.Code])).toEqual([[v1, 'AccessDenied']]);
    expect(many.Deleted?.map((d) => d.VersionId)).toEqual([v2]);
    // A delete without a version id only adds a delete marker: allowed, the locked version stays.
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'doc' }));
    expect(marker.DeleteMarker).toBe(true);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: b, Key: 'doc', VersionId: v1 }))).Body!.transformToString()).toBe('one');
    // Once the date has passed (the test clock), the version may go.
    s.clock.offsetMs += 21 * DAY;
    // A client whose clock agrees with the server's (SigV4 refuses a skewed request time).
    const later = new S3Client({ endpoint: s.s3Url!, region: 'cn-east-1', forcePathStyle: true, credentials: { accessKeyId: AK, secretAccessKey: SK }, systemClockOffset: 21 * DAY });
    try {
      await later.send(new DeleteObjectCommand({ Bucket: b, Key: 'doc', VersionId: v1 }));
    } finally {
      later.destroy();
      s.clock.offsetMs -= 21 * DAY;
    }
    expect((await refusal(s3.send(new HeadObjectCommand({ Bucket: b, Key: 'doc', VersionId: v1 })))).code).toMatch(/NotFound|NoSuchVersion/);
  });

  it('GOVERNANCE: the root key bypasses it with x-amz-bypass-governance-retention; a sub-user without s3:BypassGovernanceRetention cannot', async () => {
    const b = 'lock-governance';
    await lockBucket(b);
    const v1 = await put(b, 'g', 'one', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: future(7) });
    const v2 = await put(b, 'g', 'two', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: future(7) });
    // Without the header: refused, root included.
    expect((await refusal(s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'g', VersionId: v1 })))).code).toBe('AccessDenied');
    // The sub-user asking for the bypass: refused (deleting and shortening).
    expect((await refusal(sub.send(new DeleteObjectCommand({ Bucket: b, Key: 'g', VersionId: v1, BypassGovernanceRetention: true })))).code).toBe('AccessDenied');
    const shorten = await refusal(sub.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'g', VersionId: v2, Retention: { Mode: 'GOVERNANCE', RetainUntilDate: future(1) }, BypassGovernanceRetention: true })));
    expect(shorten.code).toBe('AccessDenied');
    // The sub-user may extend it, and add a delete marker.
    await sub.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'g', VersionId: v2, Retention: { Mode: 'GOVERNANCE', RetainUntilDate: future(8) } }));
    expect((await sub.send(new DeleteObjectCommand({ Bucket: b, Key: 'g' }))).DeleteMarker).toBe(true);
    // The root key with the bypass: shortens, removes, deletes.
    await s3.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'g', VersionId: v2, Retention: { Mode: 'GOVERNANCE', RetainUntilDate: future(1) }, BypassGovernanceRetention: true }));
    await s3.send(new PutObjectRetentionCommand({ Bucket: b, Key: 'g', VersionId: v2, Retention: {}, BypassGovernanceRetention: true }));
    expect((await refusal(s3.send(new GetObjectRetentionCommand({ Bucket: b, Key: 'g', VersionId: v2 })))).code).toBe('NoSuchObjectLockConfiguration');
    await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'g', VersionId: v1, BypassGovernanceRetention: true }));
    expect((await refusal(s3.send(new HeadObjectCommand({ Bucket: b, Key: 'g', VersionId: v1 })))).code).toMatch(/NotFound|NoSuchVersion/);
  });

  it('legal hold: on and off per version; a held version cannot be deleted by anyone, bypass or not', async () => {
    const b = 'lock-hold';
    await lockBucket(b);
    const v = await put(b, 'h', 'held', { ObjectLockLegalHoldStatus: 'ON' });
    expect((await s3.send(new GetObjectLegalHoldCommand({ Bucket: b, Key: 'h', VersionId: v }))).LegalHold).toEqual({ Status: 'ON' });
    const head = await s3.send(new HeadObjectCommand({ Bucket: b, Key: 'h' }));
    expect(head.ObjectLockLegalHoldStatus).toBe('ON');
    const r = await refusal(s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'h', VersionId: v, BypassGovernanceRetention: true })));
    expect([r.code, r.message]).toEqual(['AccessDenied', expect.stringContaining('legal hold')]);
    await s3.send(new PutObjectLegalHoldCommand({ Bucket: b, Key: 'h', VersionId: v, LegalHold: { Status: 'OFF' } }));
    expect((await s3.send(new GetObjectLegalHoldCommand({ Bucket: b, Key: 'h', VersionId: v }))).LegalHold).toEqual({ Status: 'OFF' });
    await s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'h', VersionId: v }));
  });
});

describe('lock on writes', () => {
  it('the default retention applies to new versions (PUT, multipart, copy, a Kodo upload); headers override it; GET and HEAD answer it', async () => {
    const b = 'lock-default';
    await lockBucket(b);
    await s3.send(new PutObjectLockConfigurationCommand({ Bucket: b, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled', Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: 2 } } } }));
    const before = s.clock.nowMs();
    await put(b, 'p');
    const got = await s3.send(new GetObjectCommand({ Bucket: b, Key: 'p' }));
    await got.Body!.transformToString();
    expect(got.ObjectLockMode).toBe('COMPLIANCE');
    const until = got.ObjectLockRetainUntilDate!.getTime();
    expect(until).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 2 * DAY - 1000);
    expect(until).toBeLessThanOrEqual(s.clock.nowMs() + 2 * DAY);
    // Headers win over the default.
    const explicit = future(30);
    await put(b, 'q', 'x', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: explicit });
    const q = await s3.send(new HeadObjectCommand({ Bucket: b, Key: 'q' }));
    expect([q.ObjectLockMode, q.ObjectLockRetainUntilDate]).toEqual(['GOVERNANCE', explicit]);
    // Multipart: the headers of the create apply at complete.
    const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'm', ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: explicit, ObjectLockLegalHoldStatus: 'ON' }));
    const part = await s3.send(new UploadPartCommand({ Bucket: b, Key: 'm', UploadId: mp.UploadId, PartNumber: 1, Body: 'part' }));
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: 'm', UploadId: mp.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    const m = await s3.send(new HeadObjectCommand({ Bucket: b, Key: 'm' }));
    expect([m.ObjectLockMode, m.ObjectLockRetainUntilDate, m.ObjectLockLegalHoldStatus]).toEqual(['GOVERNANCE', explicit, 'ON']);
    // A copy does not carry the source's lock: its own headers, else the default.
    await s3.send(new CopyObjectCommand({ Bucket: b, Key: 'c', CopySource: `${b}/m` }));
    const c = await s3.send(new HeadObjectCommand({ Bucket: b, Key: 'c' }));
    expect([c.ObjectLockMode, c.ObjectLockLegalHoldStatus]).toEqual(['COMPLIANCE', undefined]);
    await s3.send(new CopyObjectCommand({ Bucket: b, Key: 'c2', CopySource: `${b}/p`, ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: explicit }));
    expect((await s3.send(new HeadObjectCommand({ Bucket: b, Key: 'c2' }))).ObjectLockMode).toBe('GOVERNANCE');
    // A past retain-until date on a PUT: InvalidArgument, nothing stored.
    const past = await refusal(put(b, 'late', 'x', { ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: new Date(s.clock.nowMs() - 1000) }));
    expect(past.code).toBe('InvalidArgument');
    expect((await refusal(s3.send(new HeadObjectCommand({ Bucket: b, Key: 'late' })))).code).toMatch(/NotFound|NoSuchKey/);
    // A Kodo upload gets the default too.
    const token = new qiniu.rs.PutPolicy({ scope: `${b}:kodo` }).uploadToken(s.mac);
    const up = await fetch(`${s.url}/putb64/-1/key/${qiniu.util.urlsafeBase64Encode('kodo')}`, {
      method: 'POST',
      headers: { Authorization: `UpToken ${token}`, 'Content-Type': 'application/octet-stream' },
      body: Buffer.from('hello').toString('base64'),
    });
    expect(up.status).toBe(200);
    expect((await s3.send(new HeadObjectCommand({ Bucket: b, Key: 'kodo' }))).ObjectLockMode).toBe('COMPLIANCE');
  });

  it('boto3: create with lock, put with retention, read it, delete refused', async () => {
    const b = 'lock-boto';
    await lockBucket(b);
    const out = await boto3(s.s3Url!, { ak: AK, sk: SK }, b, `
import datetime
until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)
put = c.put_object(Bucket=BUCKET, Key='b', Body=b'boto', ObjectLockMode='COMPLIANCE', ObjectLockRetainUntilDate=until)
r = c.get_object_retention(Bucket=BUCKET, Key='b', VersionId=put['VersionId'])['Retention']
print(r['Mode'])
c.put_object_legal_hold(Bucket=BUCKET, Key='b', VersionId=put['VersionId'], LegalHold={'Status': 'ON'})
print(c.get_object_legal_hold(Bucket=BUCKET, Key='b', VersionId=put['VersionId'])['LegalHold']['Status'])
try:
    c.delete_object(Bucket=BUCKET, Key='b', VersionId=put['VersionId'], BypassGovernanceRetention=True)
    print('deleted')
except ClientError as e:
    print(e.response['Error']['Code'])
print(c.get_object_lock_configuration(Bucket=BUCKET)['ObjectLockConfiguration']['ObjectLockEnabled'])
`);
    expect(out.trim().split('\n')).toEqual(['COMPLIANCE', 'ON', 'AccessDenied', 'Enabled']);
  });
});
