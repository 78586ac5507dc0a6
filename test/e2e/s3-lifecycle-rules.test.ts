/**
 * S3 lifecycle rules beyond Kodo's, through the AWS SDK v3 and boto3, asserting what the AWS
 * documentation says (PutBucketLifecycleConfiguration, "Lifecycle configuration elements"): disabled rules kept
 * and not applied; Expiration by Date (midnight UTC) and Days; Filter by Prefix, Tag, And (prefix + tags + sizes),
 * sizes alone; the legacy Prefix; rules without ID or prefix; AbortIncompleteMultipartUpload aborting old uploads;
 * NoncurrentVersionExpiration / ExpiredObjectDeleteMarker kept and applied on a versioned bucket (noncurrent days
 * counted from the successor's creation, NewerNoncurrentVersions kept, sole delete markers removed); the validation
 * errors; what Kodo's rules/get shows.
 * Expiry removes exactly the matching objects: the server clock moves forward, the expiry sweep (what the
 * background sweeper runs at GRANARY_EXPIRY_INTERVAL) runs, and the clock moves back so signatures stay fresh.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutBucketLifecycleConfigurationCommand,
  PutObjectCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { sweepExpired } from '../../src/objects/expiry.js';
import { boto3 } from '../helpers/boto3.js';
import { scrape, total } from '../helpers/metrics.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const DAY = 86_400;
let s: TestServer;
let s3: S3Client;

beforeAll(async () => {
  // The background sweeper stays out of the way: the tests run sweeps themselves.
  s = await startTestServer({ GRANARY_EXPIRY_INTERVAL: '86400' });
  s3 = s3Client(s.s3Url!, AK, SK);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

/** Runs one expiry sweep with the server clock `days` ahead, then puts the clock back. */
async function sweepAt(days: number): Promise<void> {
  s.clock.offsetMs = days * DAY * 1000;
  try {
    await sweepExpired(s.running.g);
  } finally {
    s.clock.offsetMs = 0;
  }
}

const put = (Bucket: string, Rules: LifecycleRule[]): Promise<unknown> =>
  s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules } }));

async function keys(Bucket: string): Promise<string[]> {
  const r = await s3.send(new ListObjectsV2Command({ Bucket }));
  return (r.Contents ?? []).map((o) => o.Key ?? '');
}

/** The bucket's rules through the Kodo API (uc rules/get), ctime left out. */
async function kodoRules(bucket: string): Promise<Record<string, unknown>[]> {
  const url = `${s.url}/rules/get?bucket=${bucket}`;
  const res = await fetch(url, { headers: { authorization: qiniu.util.generateAccessToken(s.mac, url) } });
  expect(res.status).toBe(200);
  return ((await res.json()) as Record<string, unknown>[]).map(({ ctime: _ctime, ...rest }) => rest);
}

describe('S3 lifecycle rules kept as S3 rules (AWS SDK v3)', () => {
  const B = 's3-lc-rules';
  beforeAll(() => createBucket(s, B));

  it('round-trips disabled rules, Date, tag, And and size filters, aborts, noncurrent and marker rules; Kodo lists them', async () => {
    const rules: LifecycleRule[] = [
      { ID: 'kodo_kind', Filter: { Prefix: 'logs/' }, Status: 'Enabled', Expiration: { Days: 30 }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 3 } },
      { ID: 'off', Filter: { Prefix: 'tmp/' }, Status: 'Disabled', Expiration: { Days: 1 } },
      { ID: 'on-date', Filter: { Prefix: 'old/' }, Status: 'Enabled', Expiration: { Date: new Date('2031-01-01T00:00:00Z') } },
      { ID: 'tagged', Filter: { Tag: { Key: 'class', Value: 'temp' } }, Status: 'Enabled', Expiration: { Days: 2 } },
      {
        ID: 'and with sizes',
        Filter: { And: { Prefix: 'media/', Tags: [{ Key: 'a', Value: '1' }], ObjectSizeGreaterThan: 100, ObjectSizeLessThan: 1000 } },
        Status: 'Enabled',
        Expiration: { Days: 5 },
      },
      { ID: 'big', Filter: { ObjectSizeGreaterThan: 1048576 }, Status: 'Enabled', Expiration: { Days: 9 } },
      { ID: 'legacy', Prefix: 'legacy/', Status: 'Enabled', Expiration: { Days: 4 } },
      { ID: 'versions', Filter: {}, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 7, NewerNoncurrentVersions: 2 } },
      { ID: 'markers', Filter: { Prefix: 'm/' }, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } },
      { Status: 'Enabled', Filter: { Prefix: 'noid/' }, Expiration: { Days: 6 } },
    ];
    await put(B, rules);
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: B }));
    expect(got.Rules).toEqual([
      rules[0],
      rules[1],
      rules[2],
      rules[3],
      rules[4],
      rules[5],
      rules[6],
      rules[7],
      rules[8],
      { ID: 'rule_10', Status: 'Enabled', Filter: { Prefix: 'noid/' }, Expiration: { Days: 6 } },
    ]);
    // Kodo's listing: the rules Kodo keeps, then the S3-only ones in its shape with what else they do.
    const k = await kodoRules(B);
    expect(k.map((r) => r.name)).toEqual(['kodo_kind', 'legacy', 'rule_10', 'off', 'on-date', 'tagged', 'and with sizes', 'big', 'versions', 'markers']);
    expect(k.find((r) => r.name === 'kodo_kind')).toMatchObject({ prefix: 'logs/', delete_after_days: 30 });
    expect(k.find((r) => r.name === 'kodo_kind')).not.toHaveProperty('s3');
    expect(k.find((r) => r.name === 'tagged')).toMatchObject({ prefix: '', delete_after_days: 2, s3: 'tag class=temp' });
    expect(k.find((r) => r.name === 'off')).toMatchObject({ prefix: 'tmp/', s3: 'disabled' });
    expect(k.find((r) => r.name === 'and with sizes')).toMatchObject({ prefix: 'media/', s3: 'tag a=1, size > 100, size < 1000' });
  });

  it('answers the validation errors AWS answers, and keeps the rules already set', async () => {
    await put(B, [{ ID: 'keep', Filter: { Prefix: 'a/' }, Status: 'Enabled', Expiration: { Days: 10 } }]);
    const refused: Array<[string, LifecycleRule[], string]> = [
      ['date not at midnight', [{ ID: 'd', Filter: {}, Status: 'Enabled', Expiration: { Date: new Date('2031-01-01T10:00:00Z') } }], 'InvalidArgument'],
      ['zero days', [{ ID: 'z', Filter: {}, Status: 'Enabled', Expiration: { Days: 0 } }], 'InvalidArgument'],
      ['over 100 newer noncurrent versions', [{ ID: 'n', Filter: {}, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 1, NewerNoncurrentVersions: 101 } }], 'InvalidArgument'],
      ['no action', [{ ID: 'n', Filter: { Prefix: 'x/' }, Status: 'Enabled' }], 'InvalidRequest'],
      [
        'abort with tags',
        [{ ID: 'at', Filter: { Tag: { Key: 'k', Value: 'v' } }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }],
        'InvalidRequest',
      ],
      ['marker with tags', [{ ID: 'mt', Filter: { Tag: { Key: 'k', Value: 'v' } }, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } }], 'InvalidRequest'],
      [
        'sizes the wrong way round',
        [{ ID: 'sz', Filter: { And: { ObjectSizeGreaterThan: 500, ObjectSizeLessThan: 100 } }, Status: 'Enabled', Expiration: { Days: 1 } }],
        'InvalidArgument',
      ],
      [
        'repeated ID',
        [
          { ID: 'same', Filter: { Prefix: 'p/' }, Status: 'Enabled', Expiration: { Days: 1 } },
          { ID: 'same', Filter: { Prefix: 'q/' }, Status: 'Enabled', Expiration: { Days: 1 } },
        ],
        'InvalidArgument',
      ],
      ['ID too long', [{ ID: 'x'.repeat(256), Filter: {}, Status: 'Enabled', Expiration: { Days: 1 } }], 'InvalidArgument'],
      ['transition with a tag filter', [{ ID: 'tt', Filter: { Tag: { Key: 'k', Value: 'v' } }, Status: 'Enabled', Transitions: [{ Days: 3, StorageClass: 'GLACIER' }] }], 'NotImplemented'],
    ];
    for (const [what, rules, code] of refused) expect([what, await codeOf(put(B, rules))]).toEqual([what, code]);
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: B }));
    expect(got.Rules).toEqual([{ ID: 'keep', Filter: { Prefix: 'a/' }, Status: 'Enabled', Expiration: { Days: 10 } }]);
  });

  it('expires exactly the objects a tag, size or Date rule matches; a disabled rule does nothing', async () => {
    const E = 's3-lc-expire';
    await createBucket(s, E);
    const objects: Array<[string, number, string?]> = [
      ['t/yes', 10, 'expire=yes&x=1'],
      ['t/no', 10, 'expire=no'],
      ['t/none', 10],
      ['s/small', 50],
      ['s/mid', 2000],
      ['s/large', 5000],
      ['d/one', 1],
      ['keep', 1, 'expire=yes'],
    ];
    for (const [Key, size, Tagging] of objects) {
      await s3.send(new PutObjectCommand({ Bucket: E, Key, Body: Buffer.alloc(size, 1), ...(Tagging ? { Tagging } : {}) }));
    }
    const tomorrow = new Date(Math.ceil(Date.now() / 1000 / DAY) * DAY * 1000);
    await put(E, [
      { ID: 'tag', Filter: { And: { Prefix: 't/', Tags: [{ Key: 'expire', Value: 'yes' }] } }, Status: 'Enabled', Expiration: { Days: 1 } },
      { ID: 'size', Filter: { And: { Prefix: 's/', ObjectSizeGreaterThan: 1000, ObjectSizeLessThan: 4000 } }, Status: 'Enabled', Expiration: { Days: 4 } },
      { ID: 'date', Filter: { Prefix: 'd/' }, Status: 'Enabled', Expiration: { Date: new Date(tomorrow.getTime() + 2 * DAY * 1000) } },
      { ID: 'off', Filter: {}, Status: 'Disabled', Expiration: { Days: 1 } },
    ]);
    // Day 0: nothing is due.
    await sweepAt(0);
    expect(await keys(E)).toEqual(['d/one', 'keep', 's/large', 's/mid', 's/small', 't/no', 't/none', 't/yes']);
    // Two days on: the tag rule (1 day, rounded to the next UTC midnight) took t/yes only.
    await sweepAt(2);
    expect(await keys(E)).toEqual(['d/one', 'keep', 's/large', 's/mid', 's/small', 't/no', 't/none']);
    // Three and a half days on: the Date passed: d/one went (the size rule's 4 days, rounded up, have not).
    await sweepAt(3.5);
    expect(await keys(E)).toEqual(['keep', 's/large', 's/mid', 's/small', 't/no', 't/none']);
    // Five days on: the size rule took the object between 1000 and 4000 bytes only.
    await sweepAt(5);
    expect(await keys(E)).toEqual(['keep', 's/large', 's/small', 't/no', 't/none']);
  });

  it('aborts incomplete multipart uploads DaysAfterInitiation days old under the rule prefix', async () => {
    const M = 's3-lc-mpu';
    await createBucket(s, M);
    const old = await s3.send(new CreateMultipartUploadCommand({ Bucket: M, Key: 'up/old' }));
    const other = await s3.send(new CreateMultipartUploadCommand({ Bucket: M, Key: 'elsewhere/x' }));
    await put(M, [{ ID: 'abort', Filter: { Prefix: 'up/' }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }]);
    await sweepAt(0);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: M }))).Uploads?.map((u) => u.Key)).toEqual(['elsewhere/x', 'up/old']);
    await sweepAt(2);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: M }))).Uploads?.map((u) => u.Key)).toEqual(['elsewhere/x']);
    expect(await codeOf(s3.send(new AbortMultipartUploadCommand({ Bucket: M, Key: 'up/old', UploadId: old.UploadId })))).toBe('NoSuchUpload');
    await s3.send(new AbortMultipartUploadCommand({ Bucket: M, Key: 'elsewhere/x', UploadId: other.UploadId }));
  });
});

describe('noncurrent-version lifecycle on a versioned bucket (AWS SDK v3)', () => {
  const B = 's3-lc-versions';

  /** Every version and marker of the bucket as `key:versionId`, markers with a `!`. */
  async function versions(): Promise<string[]> {
    const r = await s3.send(new ListObjectVersionsCommand({ Bucket: B }));
    return [...(r.Versions ?? []).map((v) => `${v.Key}:${v.VersionId}`), ...(r.DeleteMarkers ?? []).map((m) => `${m.Key}:${m.VersionId}!`)].sort();
  }
  /** The bucket's /metrics version gauges: noncurrent versions, delete markers, noncurrent bytes. */
  async function versionGauges(): Promise<number[]> {
    const m = await scrape(s);
    return ['noncurrent_versions', 'delete_markers', 'noncurrent_bytes'].map((n) => total(m, `granary_bucket_${n}`, { bucket: B }));
  }
  const putv = async (Key: string, client = s3): Promise<string> =>
    (await client.send(new PutObjectCommand({ Bucket: B, Key, Body: Key }))).VersionId ?? '';

  it('deletes versions NoncurrentDays after their successor was made, keeps NewerNoncurrentVersions, removes sole delete markers', async () => {
    await createBucket(s, B);
    await s3.send(new PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: 'Enabled' } }));
    const rules: LifecycleRule[] = [
      { ID: 'keep-one', Filter: { Prefix: 'nc/' }, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 2, NewerNoncurrentVersions: 1 } },
      { ID: 'two-days', Filter: { Prefix: 'old/' }, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 2 } },
      { ID: 'markers', Filter: { Prefix: 'dm/' }, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } },
    ];
    await put(B, rules);
    expect((await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: B }))).Rules).toEqual(rules);

    // old/k's first version is written ten days ago (server and client clocks both behind), its second now: the
    // first is noncurrent since now, not since its own upload.
    const past = s3Client(s.s3Url!, AK, SK);
    past.config.systemClockOffset = -10 * DAY * 1000;
    s.clock.offsetMs = -10 * DAY * 1000;
    let k1: string;
    try {
      k1 = await putv('old/k', past);
    } finally {
      s.clock.offsetMs = 0;
      past.destroy();
    }
    const k2 = await putv('old/k');
    const [a1, a2, a3] = [await putv('nc/a'), await putv('nc/a'), await putv('nc/a')];
    // dm/gone: its only version deleted for good under its marker; dm/kept: a marker over a version.
    const g1 = await putv('dm/gone');
    const gm = (await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'dm/gone' }))).VersionId;
    await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'dm/gone', VersionId: g1 }));
    const kv = await putv('dm/kept');
    const km = (await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'dm/kept' }))).VersionId;
    const all = [`old/k:${k1}`, `old/k:${k2}`, `nc/a:${a1}`, `nc/a:${a2}`, `nc/a:${a3}`, `dm/kept:${kv}`, `dm/kept:${km}!`];
    expect(await versions()).toEqual([...all, `dm/gone:${gm}!`].sort());
    expect(await versionGauges()).toEqual([4, 2, 5 + 4 + 4 + 7]);

    // A day on: only the sole marker is gone (nothing has been noncurrent for two days).
    await sweepAt(1);
    expect(await versions()).toEqual([...all].sort());
    // Three days on: nc/a keeps its newest noncurrent version, old/k loses its first one.
    await sweepAt(3);
    expect(await versions()).toEqual([`old/k:${k2}`, `nc/a:${a2}`, `nc/a:${a3}`, `dm/kept:${kv}`, `dm/kept:${km}!`].sort());
    expect(await versionGauges()).toEqual([2, 1, 4 + 7]);
  });
});

describe('S3 lifecycle rules through boto3', () => {
  const B = 's3-lc-boto3';
  beforeAll(() => createBucket(s, B));

  it('sets a tag- and size-filtered configuration; the sweep removes only the matching objects', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, B, `
for key, size, tags in [('logs/a', 10, 'tier=tmp'), ('logs/b', 10, 'tier=keep'), ('big/x', 3000, ''), ('big/y', 10, '')]:
    c.put_object(Bucket=BUCKET, Key=key, Body=b'x' * size, Tagging=tags)
rules = [
    {'ID': 'tmp-logs', 'Filter': {'And': {'Prefix': 'logs/', 'Tags': [{'Key': 'tier', 'Value': 'tmp'}]}}, 'Status': 'Enabled', 'Expiration': {'Days': 1}},
    {'ID': 'big', 'Filter': {'ObjectSizeGreaterThan': 1000}, 'Status': 'Enabled', 'Expiration': {'Days': 1}},
    {'ID': 'paused', 'Filter': {'Prefix': ''}, 'Status': 'Disabled', 'Expiration': {'Days': 1}},
    {'Filter': {'Prefix': 'uploads/'}, 'Status': 'Enabled', 'AbortIncompleteMultipartUpload': {'DaysAfterInitiation': 1}},
]
c.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={'Rules': rules})
got = c.get_bucket_lifecycle_configuration(Bucket=BUCKET)['Rules']
assert [r['ID'] for r in got] == ['tmp-logs', 'big', 'paused', 'rule_4'], got
assert got[0]['Filter'] == rules[0]['Filter'], got[0]
assert got[1]['Filter'] == {'ObjectSizeGreaterThan': 1000}, got[1]
assert got[2]['Status'] == 'Disabled'
assert got[3]['AbortIncompleteMultipartUpload'] == {'DaysAfterInitiation': 1}
expect_error(400, 'InvalidArgument', c.put_bucket_lifecycle_configuration, Bucket=BUCKET,
             LifecycleConfiguration={'Rules': [{'ID': 'x', 'Filter': {}, 'Status': 'Enabled', 'Expiration': {'Date': '2031-01-01T12:00:00Z'}}]})
expect_error(400, 'MalformedXML', c.put_bucket_lifecycle_configuration, Bucket=BUCKET,
             LifecycleConfiguration={'Rules': [{'ID': 'x', 'Filter': {}, 'Status': 'Maybe', 'Expiration': {'Days': 1}}]})
up = c.create_multipart_upload(Bucket=BUCKET, Key='uploads/part')
print(up['UploadId'])
`);
    await sweepAt(2);
    await boto3(s.s3Url!, { ak: AK, sk: SK }, B, `
keys = [o['Key'] for o in c.list_objects_v2(Bucket=BUCKET).get('Contents', [])]
assert keys == ['big/y', 'logs/b'], keys
assert c.list_multipart_uploads(Bucket=BUCKET).get('Uploads', []) == []
c.delete_bucket_lifecycle(Bucket=BUCKET)
expect_error(404, 'NoSuchLifecycleConfiguration', c.get_bucket_lifecycle_configuration, Bucket=BUCKET)
`);
  });
});
