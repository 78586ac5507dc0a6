/**
 * GRANARY_BLOBS parsing (config.ts): the default, s3:// URLs with their parameters, credentials, the bounds of the S3
 * calls, bad values; and GRANARY_STOP_TIMEOUT.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const blobs = (env: Record<string, string>) => loadConfig(env).blobs;

describe('GRANARY_STOP_TIMEOUT', () => {
  it('is 30 s by default, whole seconds from 1 to 3600', () => {
    expect(loadConfig({}).stopTimeoutSeconds).toBe(30);
    expect(loadConfig({ GRANARY_STOP_TIMEOUT: '5' }).stopTimeoutSeconds).toBe(5);
    expect(() => loadConfig({ GRANARY_STOP_TIMEOUT: '0' })).toThrow(/GRANARY_STOP_TIMEOUT must be an integer between 1 and 3600/);
  });
});

describe('GRANARY_BLOBS', () => {
  it('defaults to the data dir', () => {
    expect(blobs({})).toEqual({ kind: 'fs' });
    expect(blobs({ GRANARY_BLOBS: '' })).toEqual({ kind: 'fs' });
  });

  it('parses s3://bucket/prefix with endpoint, region, path style and the AWS_* credentials', () => {
    const cfg = blobs({
      GRANARY_BLOBS: 's3://granary-data/node/blobs/?endpoint=http://127.0.0.1:7480/&region=eu-1&forcePathStyle=true',
      AWS_ACCESS_KEY_ID: 'AK',
      AWS_SECRET_ACCESS_KEY: 'SK',
      GRANARY_S3_PART_SIZE: String(16 * 1024 * 1024),
    });
    expect(cfg).toEqual({
      kind: 's3',
      bucket: 'granary-data',
      prefix: 'node/blobs/',
      endpoint: 'http://127.0.0.1:7480',
      region: 'eu-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
      cacheBytes: 1024 ** 3,
      partBytes: 16 * 1024 * 1024,
      staleUploadHours: 24,
      timeoutSeconds: 30,
      connectTimeoutSeconds: 5,
    });
  });

  it('reads the bounds of the S3 calls (GRANARY_S3_TIMEOUT, GRANARY_S3_CONNECT_TIMEOUT) in seconds', () => {
    expect(blobs({ GRANARY_BLOBS: 's3://bkt', GRANARY_S3_TIMEOUT: '2', GRANARY_S3_CONNECT_TIMEOUT: '1' })).toMatchObject({
      timeoutSeconds: 2,
      connectTimeoutSeconds: 1,
    });
    for (const bad of ['0', '3601', '1.5', 'soon']) {
      expect(() => blobs({ GRANARY_BLOBS: 's3://bkt', GRANARY_S3_TIMEOUT: bad })).toThrow(/GRANARY_S3_TIMEOUT must be an integer between 1 and 3600/);
    }
    expect(() => blobs({ GRANARY_BLOBS: 's3://bkt', GRANARY_S3_CONNECT_TIMEOUT: '601' })).toThrow(/GRANARY_S3_CONNECT_TIMEOUT/);
  });

  it('has defaults: no prefix, us-east-1, path style only with an endpoint, the SDK chain for credentials', () => {
    expect(blobs({ GRANARY_BLOBS: 's3://bkt' })).toMatchObject({ bucket: 'bkt', prefix: '', region: 'us-east-1', forcePathStyle: false });
    expect(blobs({ GRANARY_BLOBS: 's3://bkt?endpoint=https://s3.example' })).toMatchObject({ forcePathStyle: true });
    expect(blobs({ GRANARY_BLOBS: 's3://bkt?endpoint=https://s3.example&forcePathStyle=false' })).toMatchObject({ forcePathStyle: false });
    expect(blobs({ GRANARY_BLOBS: 's3://bkt' })).not.toHaveProperty('credentials');
  });

  it.each([
    ['file:///srv/blobs', /must look like s3:\/\//],
    ['s3://', /must look like s3:\/\//],
    ['s3://B', /not an S3 bucket name/],
    ['s3://Bucket_Name', /not an S3 bucket name/],
    ['s3://bkt?endpoint=ftp://x', /endpoint must be http/],
    ['s3://bkt?endpoint=http://host/path', /endpoint must be http/],
    ['s3://bkt?forcePathStyle=yes', /forcePathStyle must be true or false/],
    ['s3://bkt?secret=1', /unknown parameter "secret"/],
    ['s3://bkt/%E0%A4%A', /percent-encoding/],
  ])('refuses %s', (value, message) => {
    expect(() => blobs({ GRANARY_BLOBS: value })).toThrow(message);
  });

  it('refuses half a key pair and a part size under 5 MiB', () => {
    expect(() => blobs({ GRANARY_BLOBS: 's3://bkt', AWS_ACCESS_KEY_ID: 'AK' })).toThrow(/set together/);
    expect(() => blobs({ GRANARY_BLOBS: 's3://bkt', GRANARY_S3_PART_SIZE: '1048576' })).toThrow(/GRANARY_S3_PART_SIZE/);
  });
});
