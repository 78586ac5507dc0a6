/**
 * S3 bucket lifecycle over Kodo's lifecycle rules, through the AWS SDK: a configuration round trip (read back
 * through the Kodo API's rules/get too), rules the Kodo API adds seen by S3, refusals of transitions Kodo cannot
 * keep (never dropped), Put replacing the whole set, and Delete. Rules kept as S3 rules: s3-lifecycle-rules.test.ts.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DeleteBucketLifecycleCommand,
  GetBucketLifecycleConfigurationCommand,
  PutBucketLifecycleConfigurationCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const bucket = 's3-lifecycle';
let s: TestServer;
let s3: S3Client;

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
  await createBucket(s, bucket);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

/** The bucket's rules through the Kodo API (uc rules/get), ctime left out. */
async function kodoRules(): Promise<Record<string, unknown>[]> {
  const url = `${s.url}/rules/get?bucket=${bucket}`;
  const res = await fetch(url, { headers: { authorization: qiniu.util.generateAccessToken(s.mac, url) } });
  expect(res.status).toBe(200);
  const rules = (await res.json()) as Record<string, unknown>[];
  return rules.map(({ ctime: _ctime, ...rest }) => rest);
}

const put = (Rules: LifecycleRule[]): Promise<unknown> =>
  s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules } }));

describe('bucket lifecycle ↔ Kodo lifecycle rules', () => {
  it('round-trips a configuration, which the Kodo API reads as rules; Put replaces the set; Delete removes it', async () => {
    expect(await codeOf(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket })))).toBe('NoSuchLifecycleConfiguration');
    await put([
      {
        ID: 'logs_rule',
        Filter: { Prefix: 'logs/' },
        Status: 'Enabled',
        Transitions: [
          { Days: 30, StorageClass: 'STANDARD_IA' },
          { Days: 60, StorageClass: 'GLACIER_IR' },
          { Days: 90, StorageClass: 'GLACIER' },
          { Days: 180, StorageClass: 'DEEP_ARCHIVE' },
        ],
        Expiration: { Days: 365 },
      },
      { ID: 'tmp', Prefix: 'tmp/', Status: 'Enabled', Expiration: { Days: 1 } },
    ]);
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    expect(got.Rules).toEqual([
      {
        ID: 'logs_rule',
        Filter: { Prefix: 'logs/' },
        Status: 'Enabled',
        Transitions: [
          { Days: 30, StorageClass: 'STANDARD_IA' },
          { Days: 60, StorageClass: 'GLACIER_IR' },
          { Days: 90, StorageClass: 'GLACIER' },
          { Days: 180, StorageClass: 'DEEP_ARCHIVE' },
        ],
        Expiration: { Days: 365 },
      },
      { ID: 'tmp', Prefix: 'tmp/', Status: 'Enabled', Expiration: { Days: 1 } },
    ]);
    expect(await kodoRules()).toEqual([
      {
        name: 'logs_rule',
        prefix: 'logs/',
        to_line_after_days: 30,
        to_archive_ir_after_days: 60,
        to_archive_after_days: 90,
        to_deep_archive_after_days: 180,
        delete_after_days: 365,
        history_delete_after_days: 0,
        history_to_line_after_days: 0,
      },
      {
        name: 'tmp',
        prefix: 'tmp/',
        to_line_after_days: 0,
        to_archive_ir_after_days: 0,
        to_archive_after_days: 0,
        to_deep_archive_after_days: 0,
        delete_after_days: 1,
        history_delete_after_days: 0,
        history_to_line_after_days: 0,
      },
    ]);

    // A second Put replaces the whole set; a rule without ID gets a name.
    await put([{ Filter: {}, Status: 'Enabled', Expiration: { Days: 7 } }]);
    expect(await kodoRules()).toEqual([expect.objectContaining({ name: 'rule_1', prefix: '', delete_after_days: 7, to_line_after_days: 0 })]);

    await s3.send(new DeleteBucketLifecycleCommand({ Bucket: bucket }));
    expect(await kodoRules()).toEqual([]);
    expect(await codeOf(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket })))).toBe('NoSuchLifecycleConfiguration');
  });

  it('refuses transitions Kodo cannot keep, and keeps the rules already set', async () => {
    await put([{ ID: 'keep', Filter: { Prefix: 'a/' }, Status: 'Enabled', Expiration: { Days: 10 } }]);
    const refused: [LifecycleRule, string][] = [
      [{ ID: 'tag', Filter: { Tag: { Key: 'k', Value: 'v' } }, Status: 'Enabled', Transitions: [{ Days: 3, StorageClass: 'GLACIER' }] }, 'NotImplemented'],
      [{ ID: 'tdate', Filter: { Prefix: 'b/' }, Status: 'Enabled', Transitions: [{ Date: new Date('2030-01-01T00:00:00Z'), StorageClass: 'GLACIER' }] }, 'NotImplemented'],
      [
        {
          ID: 'twice',
          Filter: { Prefix: 'b/' },
          Status: 'Enabled',
          Transitions: [
            { Days: 30, StorageClass: 'GLACIER' },
            { Days: 60, StorageClass: 'GLACIER' },
          ],
        },
        'InvalidArgument',
      ],
      [{ ID: 'cls', Filter: { Prefix: 'b/' }, Status: 'Enabled', Transitions: [{ Days: 30, StorageClass: 'ONEZONE_IA' }] }, 'InvalidArgument'],
      // Kodo's order: the deletion comes after every transition.
      [{ ID: 'order', Filter: { Prefix: 'b/' }, Status: 'Enabled', Transitions: [{ Days: 30, StorageClass: 'GLACIER' }], Expiration: { Days: 10 } }, 'InvalidArgument'],
      [{ ID: 'bad-name!', Filter: { Prefix: 'b/' }, Status: 'Enabled', Transitions: [{ Days: 3, StorageClass: 'GLACIER' }] }, 'InvalidArgument'],
    ];
    for (const [rule, code] of refused) {
      expect([rule.ID, await codeOf(put([rule]))]).toEqual([rule.ID, code]);
    }
    expect(await kodoRules()).toEqual([expect.objectContaining({ name: 'keep', prefix: 'a/', delete_after_days: 10 })]);
  });

  it('shows a rule added through the Kodo API (a transition at upload as day 0)', async () => {
    await s3.send(new DeleteBucketLifecycleCommand({ Bucket: bucket }));
    const url = `${s.url}/rules/add`;
    const body = `bucket=${bucket}&name=kodo_rule&prefix=k%2F&to_line_after_days=-1&delete_after_days=40`;
    const res = await fetch(url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: qiniu.util.generateAccessToken(s.mac, url, body),
      },
    });
    expect(res.status).toBe(200);
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    expect(got.Rules).toEqual([
      { ID: 'kodo_rule', Filter: { Prefix: 'k/' }, Status: 'Enabled', Transitions: [{ Days: 0, StorageClass: 'STANDARD_IA' }], Expiration: { Days: 40 } },
    ]);
  });
});
