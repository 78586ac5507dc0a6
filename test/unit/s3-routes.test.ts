/**
 * The S3 route table (src/s3api/routes.ts), addressing (server.ts), regions (region.ts) and the aws-chunked decoder
 * (auth/chunked.ts) as pure functions.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { AwsChunkedDecoder } from '../../src/s3api/auth/chunked.js';
import { awsUriEncode, canonicalQuery } from '../../src/s3api/auth/sigv4.js';
import { Errors } from '../../src/errors.js';
import { fromKodoError, isS3Error } from '../../src/s3api/errors.js';
import { acceptsLocation, acceptsSigningRegion, s3RegionOf } from '../../src/s3api/region.js';
import { matchRoute, ROUTES, type PathShape } from '../../src/s3api/routes.js';
import { addressOf, virtualHostBucket } from '../../src/s3api/server.js';
import { positionAfter } from '../../src/s3api/listing.js';

const op = (method: string, shape: PathShape, query = '', headers: string[] = []): string => {
  try {
    return matchRoute(method, shape, new URLSearchParams(query), (h) => headers.includes(h)).operation;
  } catch (err) {
    return isS3Error(err) ? err.code : String(err);
  }
};

describe('route table', () => {
  it.each([
    ['GET', 'service', '', [], 'ListBuckets'],
    ['GET', 'bucket', '', [], 'ListObjects'],
    ['GET', 'bucket', 'list-type=2&prefix=a', [], 'ListObjectsV2'],
    ['GET', 'bucket', 'location', [], 'GetBucketLocation'],
    ['GET', 'bucket', 'versions', [], 'ListObjectVersions'],
    ['POST', 'bucket', 'delete', [], 'DeleteObjects'],
    ['PUT', 'object', '', [], 'PutObject'],
    ['PUT', 'object', '', ['x-amz-copy-source'], 'CopyObject'],
    ['GET', 'object', 'partNumber=1&response-content-type=x', [], 'GetObject'],
    ['HEAD', 'object', '', [], 'HeadObject'],
    ['GET', 'bucket', 'website', [], 'NotImplemented'],
    ['PUT', 'object', 'retention', [], 'PutObjectRetention'],
    ['GET', 'object', 'torrent', [], 'NotImplemented'],
    ['POST', 'object', 'restore', [], 'NotImplemented'],
    ['GET', 'bucket', 'list-type=3', [], 'NotImplemented'],
    ['PATCH', 'object', '', [], 'MethodNotAllowed'],
    // POST on an object is served with ?uploads or ?uploadId (multipart); without either no row matches.
    ['POST', 'object', '', [], 'NotImplemented'],
    ['DELETE', 'service', '', [], 'MethodNotAllowed'],
  ] as const)('%s %s ?%s %j → %s', (method, shape, query, headers, expected) => {
    expect(op(method, shape, query, [...headers])).toBe(expected);
  });

  it('names every operation once per method and shape selector', () => {
    const keys = ROUTES.map((r) => `${r.method} ${r.shape} ${r.query ?? ''} ${r.header ?? ''}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('addressing', () => {
  it('reads bucket and key from the path or the virtual host', () => {
    expect(addressOf('/', undefined)).toEqual({ shape: 'service' });
    expect(addressOf('/b', undefined)).toEqual({ bucket: 'b', shape: 'bucket' });
    expect(addressOf('/b/', undefined)).toEqual({ bucket: 'b', shape: 'bucket' });
    expect(addressOf('/b/a%20b/c%2Bd', undefined)).toEqual({ bucket: 'b', key: 'a b/c+d', shape: 'object' });
    expect(addressOf('/x/y', 'vb')).toEqual({ bucket: 'vb', key: 'x/y', shape: 'object' });
    expect(virtualHostBucket('photos.s3.example.com:9002', 's3.example.com')).toBe('photos');
    expect(virtualHostBucket('s3.example.com', 's3.example.com')).toBeUndefined();
    expect(virtualHostBucket('photos.s3.example.com', undefined)).toBeUndefined();
    expect(() => addressOf('/b/%zz', undefined)).toThrow(/parse/);
  });

  it('maps regions as Kodo does, accepting us-east-1', () => {
    expect(['z0', 'z1', 'z2', 'na0', 'as0'].map(s3RegionOf)).toEqual(['cn-east-1', 'cn-north-1', 'cn-south-1', 'us-north-1', 'ap-southeast-1']);
    expect(acceptsSigningRegion('z0', 'us-east-1')).toBe(true);
    expect(acceptsSigningRegion('z0', 'cn-north-1')).toBe(false);
    expect(acceptsLocation('z1', '')).toBe(true);
    expect(acceptsLocation('z1', 'cn-north-1')).toBe(true);
  });

  it('encodes like AWS: unreserved kept, the rest %XX, query sorted', () => {
    expect(awsUriEncode("a b/c~d!'()*", true)).toBe('a%20b/c~d%21%27%28%29%2A');
    expect(canonicalQuery([['prefix', 'a b'], ['list-type', '2'], ['acl', '']])).toBe('acl=&list-type=2&prefix=a%20b');
  });

  it('resumes after a common prefix as a whole, after a key as a key', () => {
    expect(positionAfter('a/', { prefix: '', delimiter: '/' })).toEqual({ key: 'a/', isPrefix: true });
    expect(positionAfter('a/b', { prefix: '', delimiter: '/' })).toEqual({ key: 'a/b', isPrefix: false });
    expect(positionAfter('a/', { prefix: '', delimiter: '' })).toEqual({ key: 'a/', isPrefix: false });
  });
});

describe('aws-chunked decoder (unsigned)', () => {
  async function decode(wire: string | Buffer, pieces = 1): Promise<{ out: Buffer; trailers: Map<string, string> } | string> {
    const buf = Buffer.from(wire);
    const step = Math.ceil(buf.length / pieces);
    const parts = Array.from({ length: pieces }, (_, i) => buf.subarray(i * step, (i + 1) * step));
    const dec = new AwsChunkedDecoder({ trailers: true });
    const out: Buffer[] = [];
    dec.on('data', (c: Buffer) => out.push(c));
    try {
      await pipeline(Readable.from(parts), dec);
      return { out: Buffer.concat(out), trailers: dec.trailers };
    } catch (err) {
      return isS3Error(err) ? err.code : String(err);
    }
  }

  it('decodes chunks split anywhere and reads the trailers', async () => {
    const wire = '5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n';
    for (const pieces of [1, 3, 7, wire.length]) {
      const r = await decode(wire, pieces);
      expect(typeof r === 'string' ? r : [r.out.toString(), r.trailers.get('x-amz-checksum-crc32')]).toEqual(['hello world', 'AAAAAA==']);
    }
  });

  it.each([
    ['5\r\nhello\r\n', 'IncompleteBody'],
    ['5\r\nhelloXX0\r\n\r\n', 'InvalidRequest'],
    ['zz\r\nhello\r\n0\r\n\r\n', 'InvalidRequest'],
    ['0\r\n\r\nextra', 'InvalidRequest'],
    [`${'f'.repeat(8)}\r\n`, 'InvalidRequest'],
  ])('refuses %j with %s', async (wire, code) => {
    expect(await decode(wire)).toBe(code);
  });
});

describe('S3 error catalogue', () => {
  it('maps Kodo errors by kind, then by status', () => {
    expect(fromKodoError(Errors.notFound()).code).toBe('NoSuchKey');
    expect(fromKodoError(Errors.originFailed('origin answered 502')).code).toBe('ServiceUnavailable');
    expect(fromKodoError(Errors.forbidden('no')).code).toBe('AccessDenied');
    expect(fromKodoError(Errors.badRequest('bad')).code).toBe('InvalidArgument');
  });

  it('has 4xx/5xx statuses, messages, and no entry unused in src/s3api', async () => {
    const { readdirSync, readFileSync, statSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { s3Catalogue } = await import('../../src/s3api/errors.js');
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (name.endsWith('.ts') && name !== 'errors.ts') files.push(readFileSync(p, 'utf8'));
      }
    };
    walk(join(import.meta.dirname, '../../src/s3api'));
    const fromKodo = readFileSync(join(import.meta.dirname, '../../src/s3api/errors.ts'), 'utf8').split('const FROM_KODO')[1] ?? '';
    const text = files.join('\n') + fromKodo;
    for (const { code, status, message } of s3Catalogue()) {
      expect(status >= 400 && status < 600, code).toBe(true);
      expect(message.length, code).toBeGreaterThan(0);
      expect(text.includes(`S3Errors.${code}(`) || text.includes(`'${code}'`), `${code} is used`).toBe(true);
    }
  });
});
