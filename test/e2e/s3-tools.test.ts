/**
 * Common S3 tools against the S3 listener, each as users run it: boto3 (a python3 script), s3cmd (SigV2 and SigV4,
 * a config file in a temp dir) and rclone (a remote from environment variables) — each creates a bucket, puts,
 * lists, gets, copies and deletes, and what it wrote is checked through the Kodo API.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

let s: TestServer;
let dir: string;
let endpoint: string;

beforeAll(async () => {
  s = await startTestServer();
  endpoint = s.s3Url!;
  dir = await mkdtemp(join(tmpdir(), 'granary-s3-tools-'));
});

afterAll(async () => {
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A Kodo stat of an entry (status and fields). */
async function kodoStat(bucket: string, key: string): Promise<{ status: number; data: { fsize?: number; mimeType?: string } }> {
  return sdk(s.bucketManager().stat(bucket, key));
}

const BOTO3 = `
import json, os, sys
import boto3
from botocore.config import Config
c = boto3.client('s3', endpoint_url=os.environ['EP'], aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'],
                 region_name='cn-east-1', config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
b = 'tool-boto3'
c.create_bucket(Bucket=b)
put = c.put_object(Bucket=b, Key='dir/a.txt', Body=b'from boto3', Metadata={'tool': 'boto3'}, ContentType='text/plain')
c.upload_file(os.environ['FILE'], b, 'dir/file.bin')
listed = c.list_objects_v2(Bucket=b, Prefix='dir/', Delimiter='/')
v1 = c.list_objects(Bucket=b)
got = c.get_object(Bucket=b, Key='dir/a.txt')
c.copy_object(Bucket=b, Key='copy.txt', CopySource={'Bucket': b, 'Key': 'dir/a.txt'})
c.delete_object(Bucket=b, Key='dir/file.bin')
deleted = c.delete_objects(Bucket=b, Delete={'Objects': [{'Key': 'nothing'}], 'Quiet': True})
try:
    c.head_object(Bucket=b, Key='dir/file.bin')
    gone = False
except c.exceptions.ClientError as e:
    gone = e.response['Error']['Code'] == '404'
print(json.dumps({
    'etag': put['ETag'],
    'keys': [o['Key'] for o in listed.get('Contents', [])],
    'v1': [o['Key'] for o in v1.get('Contents', [])],
    'body': got['Body'].read().decode(),
    'meta': got['Metadata'],
    'gone': gone,
    'errors': deleted.get('Errors', []),
}))
`;

describe('boto3', () => {
  it('creates, puts (put_object and upload_file), lists, gets, copies and deletes', async () => {
    const file = join(dir, 'boto3.bin');
    await writeFile(file, Buffer.alloc(300_000, 7));
    const { stdout } = await run('python3', ['-c', BOTO3], { env: { ...process.env, EP: endpoint, AK, SK, FILE: file }, timeout: 60_000 });
    const out = JSON.parse(stdout) as { etag: string; keys: string[]; v1: string[]; body: string; meta: Record<string, string>; gone: boolean; errors: unknown[] };
    expect(out.etag).toBe(`"${createHash('md5').update('from boto3').digest('hex')}"`);
    expect(out.keys).toEqual(['dir/a.txt', 'dir/file.bin']);
    expect(out.v1).toEqual(['dir/a.txt', 'dir/file.bin']);
    expect(out.body).toBe('from boto3');
    expect(out.meta).toEqual({ tool: 'boto3' });
    expect(out.gone).toBe(true);
    expect(out.errors).toEqual([]);
    expect((await kodoStat('tool-boto3', 'copy.txt')).data).toMatchObject({ fsize: 10, mimeType: 'text/plain' });
    expect((await kodoStat('tool-boto3', 'dir/file.bin')).status).toBe(612);
  });
});

describe.each([
  ['v2', true],
  ['v4', false],
])('s3cmd (Signature %s)', (version, v2) => {
  it('creates, puts, lists, gets, copies and deletes', async () => {
    const port = new URL(endpoint).port;
    const cfg = join(dir, `s3cmd-${version}.cfg`);
    await writeFile(
      cfg,
      [
        '[default]',
        `access_key = ${AK}`,
        `secret_key = ${SK}`,
        `host_base = 127.0.0.1:${port}`,
        `host_bucket = 127.0.0.1:${port}`,
        'use_https = False',
        `signature_v2 = ${v2 ? 'True' : 'False'}`,
        'bucket_location = cn-east-1',
        'check_ssl_certificate = False',
        '',
      ].join('\n'),
    );
    const s3cmd = (...args: string[]) => run('s3cmd', ['-c', cfg, '--no-progress', ...args], { timeout: 60_000 });
    const bucket = `tool-s3cmd-${version}`;
    const src = join(dir, `s3cmd-${version}.txt`);
    await writeFile(src, `from s3cmd ${version}\n`);
    await s3cmd('mb', `s3://${bucket}`);
    await s3cmd('put', src, `s3://${bucket}/dir/a.txt`);
    const ls = await s3cmd('ls', '--recursive', `s3://${bucket}`);
    expect(ls.stdout).toContain(`s3://${bucket}/dir/a.txt`);
    const dest = join(dir, `s3cmd-${version}.out`);
    await s3cmd('get', '--force', `s3://${bucket}/dir/a.txt`, dest);
    expect(await readFile(dest, 'utf8')).toBe(`from s3cmd ${version}\n`);
    await s3cmd('cp', `s3://${bucket}/dir/a.txt`, `s3://${bucket}/copy.txt`);
    expect((await kodoStat(bucket, 'copy.txt')).data.fsize).toBe(`from s3cmd ${version}\n`.length);
    await s3cmd('del', `s3://${bucket}/dir/a.txt`);
    expect((await kodoStat(bucket, 'dir/a.txt')).status).toBe(612);
  });
});

describe('rclone', () => {
  it('creates, copies in, lists, reads, copies server-side and deletes', async () => {
    // AWS_CA_BUNDLE (set on some machines) makes rclone fail on plain-HTTP endpoints.
    const { AWS_CA_BUNDLE: _bundle, ...inherited } = process.env;
    const env = {
      ...inherited,
      RCLONE_CONFIG: join(dir, 'rclone.conf'),
      RCLONE_CONFIG_G_TYPE: 's3',
      RCLONE_CONFIG_G_PROVIDER: 'Other',
      RCLONE_CONFIG_G_ACCESS_KEY_ID: AK,
      RCLONE_CONFIG_G_SECRET_ACCESS_KEY: SK,
      RCLONE_CONFIG_G_ENDPOINT: endpoint,
      RCLONE_CONFIG_G_REGION: 'cn-east-1',
      RCLONE_CONFIG_G_FORCE_PATH_STYLE: 'true',
    };
    const rclone = (...args: string[]) => run('rclone', ['--retries', '1', '--low-level-retries', '1', ...args], { env, timeout: 60_000 });
    const src = join(dir, 'rclone.txt');
    await writeFile(src, 'from rclone');
    await rclone('mkdir', 'g:tool-rclone');
    // rclone compares the ETag it gets with the MD5 of what it sent: a mismatch would fail the copy.
    await rclone('copyto', src, 'g:tool-rclone/dir/a.txt');
    expect((await rclone('lsf', '-R', 'g:tool-rclone')).stdout.split('\n').filter(Boolean).sort()).toEqual(['dir/', 'dir/a.txt']);
    expect((await rclone('cat', 'g:tool-rclone/dir/a.txt')).stdout).toBe('from rclone');
    await rclone('copyto', 'g:tool-rclone/dir/a.txt', 'g:tool-rclone/copy.txt');
    expect((await kodoStat('tool-rclone', 'copy.txt')).data.fsize).toBe(11);
    await rclone('deletefile', 'g:tool-rclone/dir/a.txt');
    expect((await kodoStat('tool-rclone', 'dir/a.txt')).status).toBe(612);
  });
});
