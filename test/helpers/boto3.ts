/**
 * boto3 (python3-boto3) against Granary's S3 listener, as Ceph's s3-tests drive it: a python script run with a
 * ready client `c` (path style, region cn-east-1, the machine's AWS_* settings left out), `BUCKET`, and helpers —
 * `expect_error(status, code, fn, *args, **kw)` (the call must fail with exactly that HTTP status and S3 code),
 * `body(resp)` (a GetObject body as bytes), `with_headers(c, op, headers)` (extra request headers on an operation,
 * the way s3-tests add `If-Match` through `before-call` events). The script fails (non-zero exit, its traceback in the
 * rejection) when an assertion does not hold.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

const PRELUDE = `
import base64, hashlib, json, os, sys, threading
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
c = boto3.client('s3', endpoint_url=os.environ['EP'], aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'],
                 region_name='cn-east-1', config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
BUCKET = os.environ['BUCKET']

def expect_error(status, code, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except ClientError as e:
        got = (e.response['ResponseMetadata']['HTTPStatusCode'], e.response['Error']['Code'])
        assert got == (status, code), f'{fn.__name__}: expected {(status, code)}, got {got}'
        return e
    raise AssertionError(f'{fn.__name__}: expected {(status, code)}, it succeeded')

def body(resp):
    return resp['Body'].read()

def with_headers(client, op, headers):
    client.meta.events.register(f'before-call.s3.{op}', lambda **kw: kw['params']['headers'].update(headers))
`;

/** Runs `script` after the prelude (see the module comment) against `endpoint`'s `bucket`; resolves to its stdout. */
export async function boto3(endpoint: string, credentials: { ak: string; sk: string }, bucket: string, script: string): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
  const { stdout } = await run('python3', ['-c', `${PRELUDE}\n${script}`], {
    env: { ...env, EP: endpoint, AK: credentials.ak, SK: credentials.sk, BUCKET: bucket },
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}
