/**
 * S3 additional checksums (AWS S3 User Guide "Checking object integrity"; API_PutObject, API_UploadPart,
 * API_CreateMultipartUpload, API_CompleteMultipartUpload, API_GetObjectAttributes): `x-amz-checksum-crc32|crc32c|
 * crc64nvme|sha1|sha256` verified as the body streams (header or aws-chunked trailer; a mismatch is BadDigest and
 * stores nothing), kept with the object and answered by GetObject/HeadObject with `x-amz-checksum-mode: ENABLED`
 * and by GetObjectAttributes; multipart objects get the COMPOSITE checksum of their parts' (`<base64>-<n>`) or a
 * FULL_OBJECT CRC combined from theirs. Through the AWS SDK v3 (which sends CRC-32 by default) and boto3 (the calls
 * of Ceph's s3-tests `test_object_checksum_sha256`, `…_crc64nvme`, `test_multipart_checksum_sha256`,
 * `test_get_multipart_checksum_object_attributes`, `test_get_object_attributes`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectAttributesCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type ChecksumAlgorithm,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Crc64Nvme } from '@aws-sdk/checksums/crc';
import { Upload } from '@aws-sdk/lib-storage';
import { crc32, crc32c } from '@node-rs/crc32';
import { boto3 } from '../helpers/boto3.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const bucket = 's3-checksums';
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

type Algorithm = 'CRC32' | 'CRC32C' | 'CRC64NVME' | 'SHA1' | 'SHA256';

/** The big-endian digest of `data` under `a`, as S3 writes checksums (computed here, independently of the server). */
async function digest(a: Algorithm, data: Buffer): Promise<Buffer> {
  if (a === 'SHA1' || a === 'SHA256') return createHash(a.toLowerCase()).update(data).digest();
  if (a === 'CRC64NVME') {
    const h = new Crc64Nvme();
    h.update(data);
    return Buffer.from(await h.digest());
  }
  const out = Buffer.alloc(4);
  out.writeUInt32BE((a === 'CRC32' ? crc32(data) : crc32c(data)) >>> 0);
  return out;
}

const b64 = async (a: Algorithm, data: Buffer): Promise<string> => (await digest(a, data)).toString('base64');

/** The `Checksum<Algorithm>` member of an SDK answer. */
const member = (out: object, a: Algorithm): string | undefined => (out as Record<string, string | undefined>)[`Checksum${a}`];

describe('AWS SDK v3', () => {
  it('PutObject with each algorithm: verified, answered, kept; HeadObject answers it only with ChecksumMode', async () => {
    const data = randomBytes(300 * 1024);
    for (const a of ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const) {
      const key = `put/${a}`;
      const want = await b64(a, data);
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ChecksumAlgorithm: a as ChecksumAlgorithm }));
      expect(member(put, a), a).toBe(want);
      expect(put.ChecksumType).toBe('FULL_OBJECT');
      const plain = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      expect(member(plain, a)).toBeUndefined();
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
      expect(member(head, a), a).toBe(want);
      expect(head.ChecksumType).toBe('FULL_OBJECT');
      // The SDK asks for the checksum on GetObject and validates the body against it.
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
      expect(member(got, a)).toBe(want);
    }
  });

  it('the default (CRC-32), a streamed body (aws-chunked trailer), a ranged read (no checksum)', async () => {
    const data = randomBytes(3 * MiB + 17);
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'default', Body: data }));
    expect(put.ChecksumCRC32).toBe(await b64('CRC32', data));
    const streamed = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'streamed', Body: Readable.from([data.subarray(0, MiB), data.subarray(MiB)]), ContentLength: data.length }));
    expect(streamed.ChecksumCRC32).toBe(await b64('CRC32', data));
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'streamed', ChecksumMode: 'ENABLED' }));
    expect(head.ChecksumCRC32).toBe(await b64('CRC32', data));
    const ranged = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'streamed', Range: 'bytes=0-99', ChecksumMode: 'ENABLED' }));
    expect(ranged.ChecksumCRC32).toBeUndefined();
    expect(Buffer.from(await ranged.Body!.transformToByteArray()).equals(data.subarray(0, 100))).toBe(true);
  });

  it('a checksum that does not match is BadDigest and stores nothing', async () => {
    const data = Buffer.from('the real content');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'bad', Body: data }));
    for (const a of ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const) {
      const wrong = await b64(a, Buffer.from('other content'));
      const input = { Bucket: bucket, Key: 'bad', Body: Buffer.from('replacement'), [`Checksum${a}`]: wrong };
      expect(await codeOf(s3.send(new PutObjectCommand(input))), a).toBe('BadDigest');
    }
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'bad' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
  });

  it('lib-storage Upload (CRC-32 by default): a COMPOSITE checksum of the parts', async () => {
    const data = randomBytes(11 * MiB);
    await new Upload({ client: s3, params: { Bucket: bucket, Key: 'composite', Body: data }, partSize: 5 * MiB, queueSize: 2 }).done();
    const parts = [data.subarray(0, 5 * MiB), data.subarray(5 * MiB, 10 * MiB), data.subarray(10 * MiB)];
    const want = `${await b64('CRC32', Buffer.concat(await Promise.all(parts.map((p) => digest('CRC32', p)))))}-3`;
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'composite', ChecksumMode: 'ENABLED' }));
    expect(head.ChecksumCRC32).toBe(want);
    expect(head.ChecksumType).toBe('COMPOSITE');
    // The SDK skips validating a composite checksum; the bytes are whole.
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'composite' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
  });

  for (const a of ['CRC32', 'CRC32C', 'CRC64NVME'] as const) {
    it(`a FULL_OBJECT ${a} multipart upload: the whole content's CRC, combined from the parts'`, async () => {
      const key = `full/${a}`;
      const data = randomBytes(10 * MiB + 333);
      const cut = [data.subarray(0, 5 * MiB), data.subarray(5 * MiB, 10 * MiB), data.subarray(10 * MiB)];
      const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: a, ChecksumType: 'FULL_OBJECT' }));
      expect(created.ChecksumAlgorithm).toBe(a);
      expect(created.ChecksumType).toBe('FULL_OBJECT');
      const UploadId = created.UploadId!;
      const parts = [];
      for (const [i, body] of cut.entries()) {
        const out = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: body, ChecksumAlgorithm: a }));
        expect(member(out, a)).toBe(await b64(a, body));
        parts.push({ PartNumber: i + 1, ETag: out.ETag!, [`Checksum${a}`]: member(out, a) });
      }
      const listed = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId }));
      expect(listed.ChecksumAlgorithm).toBe(a);
      expect(listed.Parts?.map((p) => member(p, a))).toEqual(parts.map((p) => p[`Checksum${a}`]));
      const want = await b64(a, data);
      const done = await s3.send(new CompleteMultipartUploadCommand({
        Bucket: bucket, Key: key, UploadId, ChecksumType: 'FULL_OBJECT', [`Checksum${a}`]: want, MultipartUpload: { Parts: parts },
      }));
      expect(member(done, a)).toBe(want);
      expect(done.ChecksumType).toBe('FULL_OBJECT');
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
      expect(member(head, a)).toBe(want);
      // Full-object checksums are validated by the SDK on GetObject.
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
    });
  }

  it('CreateMultipartUpload refuses a combination S3 does not offer; UploadPart of another algorithm or a wrong value', async () => {
    expect(await codeOf(s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'x', ChecksumAlgorithm: 'SHA256', ChecksumType: 'FULL_OBJECT' })))).toBe('InvalidRequest');
    expect(await codeOf(s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'x', ChecksumAlgorithm: 'CRC64NVME', ChecksumType: 'COMPOSITE' })))).toBe('InvalidRequest');
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'x', ChecksumAlgorithm: 'SHA256' }));
    const body = Buffer.from('part');
    expect(await codeOf(s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'x', UploadId, PartNumber: 1, Body: body, ChecksumAlgorithm: 'CRC32' })))).toBe('InvalidRequest');
    expect(await codeOf(s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'x', UploadId, PartNumber: 1, Body: body, ChecksumSHA256: await b64('SHA256', Buffer.from('else')) })))).toBe('BadDigest');
    expect((await s3.send(new ListPartsCommand({ Bucket: bucket, Key: 'x', UploadId }))).Parts ?? []).toEqual([]);
  });

  it('GetObjectAttributes: ETag, Checksum, ObjectParts with the parts\' checksums, StorageClass, ObjectSize', async () => {
    const data = randomBytes(12 * MiB);
    const cut = [data.subarray(0, 5 * MiB), data.subarray(5 * MiB, 10 * MiB), data.subarray(10 * MiB)];
    const key = 'attributes/multipart';
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: 'SHA256' }));
    const parts = [];
    for (const [i, body] of cut.entries()) {
      const out = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: body, ChecksumAlgorithm: 'SHA256' }));
      parts.push({ PartNumber: i + 1, ETag: out.ETag! });
    }
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }));
    const want = `${await b64('SHA256', Buffer.concat(await Promise.all(cut.map((p) => digest('SHA256', p)))))}-3`;
    expect(done.ChecksumSHA256).toBe(want);
    const attrs = await s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: key, ObjectAttributes: ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] }));
    expect(attrs.ETag).toBe(done.ETag!.replace(/"/g, ''));
    expect(attrs.Checksum?.ChecksumSHA256).toBe(want);
    expect(attrs.Checksum?.ChecksumType).toBe('COMPOSITE');
    expect(attrs.ObjectSize).toBe(data.length);
    expect(attrs.StorageClass).toBe('STANDARD');
    expect(attrs.ObjectParts?.TotalPartsCount).toBe(3);
    expect(attrs.ObjectParts?.Parts?.map((p) => [p.PartNumber, p.Size, p.ChecksumSHA256])).toEqual(
      await Promise.all(cut.map(async (p, i) => [i + 1, p.length, await b64('SHA256', p)])),
    );
    const page = await s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: key, ObjectAttributes: ['ObjectParts'], MaxParts: 1, PartNumberMarker: '1' }));
    expect(page.ObjectParts?.Parts?.map((p) => p.PartNumber)).toEqual([2]);
    expect(page.ObjectParts?.IsTruncated).toBe(true);
    // The SDK's model has the part number markers of this operation as strings.
    expect(page.ObjectParts?.NextPartNumberMarker).toBe('2');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'attributes/single', Body: Buffer.from('foo') }));
    const single = await s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'attributes/single', ObjectAttributes: ['ETag', 'Checksum', 'ObjectParts', 'ObjectSize'] }));
    expect(single.ObjectSize).toBe(3);
    expect(single.ETag).toBe(createHash('md5').update('foo').digest('hex'));
    expect(single.Checksum?.ChecksumCRC32).toBe(await b64('CRC32', Buffer.from('foo')));
    expect(single.ObjectParts).toBeUndefined();
    expect(await codeOf(s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'attributes/none', ObjectAttributes: ['ETag'] })))).toBe('NoSuchKey');
  });
});

describe('boto3 (Ceph s3-tests checksum calls)', () => {
  it('test_object_checksum_sha256 / _crc64nvme, test_multipart_checksum_sha256, test_get_checksum_object_attributes', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, bucket, `
data = b'A' * 1024
for alg, value in (('SHA256', 'arcu6553sHVAiX4MjW0j7I7vD4w6R+Gz9Ok0Q9lTa+0='), ('CRC64NVME', 'Qeh8oXvGiSo=')):
    r = c.put_object(Bucket=BUCKET, Key='boto3/obj', Body=data, ChecksumAlgorithm=alg, **{'Checksum' + alg: value})
    assert r['Checksum' + alg] == value, r
    assert 'Checksum' + alg not in c.head_object(Bucket=BUCKET, Key='boto3/obj')
    assert c.head_object(Bucket=BUCKET, Key='boto3/obj', ChecksumMode='ENABLED')['Checksum' + alg] == value
    expect_error(400, 'BadDigest', c.put_object, Bucket=BUCKET, Key='boto3/obj', Body=data, ChecksumAlgorithm=alg, **{'Checksum' + alg: 'bad'})

attrs = c.get_object_attributes(Bucket=BUCKET, Key='boto3/obj', ObjectAttributes=['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'])
assert attrs['ObjectSize'] == 1024 and attrs['StorageClass'] == 'STANDARD' and 'ObjectParts' not in attrs, attrs
assert attrs['Checksum']['ChecksumCRC64NVME'] == 'Qeh8oXvGiSo=', attrs

part_sum = 'arcu6553sHVAiX4MjW0j7I7vD4w6R+Gz9Ok0Q9lTa+0='
def upload(key):
    r = c.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm='SHA256')
    assert r['ChecksumAlgorithm'] == 'SHA256'
    uid = r['UploadId']
    p = c.upload_part(UploadId=uid, Bucket=BUCKET, Key=key, PartNumber=1, Body=data, ChecksumAlgorithm='SHA256', ChecksumSHA256=part_sum)
    assert p['ChecksumSHA256'] == part_sum
    return uid, p

uid, p = upload('boto3/mp1')
expect_error(400, 'BadDigest', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/mp1', UploadId=uid, ChecksumSHA256='bad',
             MultipartUpload={'Parts': [{'ETag': p['ETag'].strip('"'), 'ChecksumSHA256': p['ChecksumSHA256'], 'PartNumber': 1}]})
uid, p = upload('boto3/mp2')
expect_error(400, 'BadDigest', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/mp2', UploadId=uid, ChecksumSHA256='bad',
             MultipartUpload={'Parts': [{'ETag': p['ETag'].strip('"'), 'PartNumber': 1}]})
uid, p = upload('boto3/mp3')
composite = 'Ok6Cs5b96ux6+MWQkJO7UBT5sKPBeXBLwvj/hK89smg=-1'
r = c.complete_multipart_upload(Bucket=BUCKET, Key='boto3/mp3', UploadId=uid, ChecksumSHA256=composite,
                                MultipartUpload={'Parts': [{'ETag': p['ETag'].strip('"'), 'ChecksumSHA256': p['ChecksumSHA256'], 'PartNumber': 1}]})
assert r['ChecksumSHA256'] == composite, r
assert 'ChecksumSHA256' not in c.head_object(Bucket=BUCKET, Key='boto3/mp3')
assert c.head_object(Bucket=BUCKET, Key='boto3/mp3', ChecksumMode='ENABLED')['ChecksumSHA256'] == composite
attrs = c.get_object_attributes(Bucket=BUCKET, Key='boto3/mp3', ObjectAttributes=['Checksum', 'ObjectParts'])
assert attrs['Checksum']['ChecksumSHA256'] == composite, attrs
assert [(x['PartNumber'], x['Size'], x['ChecksumSHA256']) for x in attrs['ObjectParts']['Parts']] == [(1, 1024, part_sum)], attrs
`);
  });

  it('multipart_checksum_3parts_helper: SHA256 COMPOSITE and CRC64NVME FULL_OBJECT, a repeated complete, reads by part number', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, bucket, `
MiB = 1024 * 1024
bodies = [b'A' * 5 * MiB, b'B' * 5 * MiB, b'C' * 5 * MiB]
cases = (
    ('SHA256', 'COMPOSITE', ['275VF5loJr1YYawit0XSHREhkFXYkkPKGuoK0x9VKxI=', 'mrHwOfjTL5Zwfj74F05HOQGLdUb7E5szdCbxgUSq6NM=', 'Vw7oB/nKQ5xWb3hNgbyfkvDiivl+U+/Dft48nfJfDow='], 'uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-3'),
    ('CRC64NVME', 'FULL_OBJECT', ['L/E4WYn8v98=', 'xW1l19VobYM=', 'cK5MnNaWrW4='], 'i+6LR0y3eFo='),
)
for alg, typ, sums, whole in cases:
    key = 'boto3/3parts-' + alg
    name = 'Checksum' + alg
    r = c.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm=alg, ChecksumType=typ)
    assert r['ChecksumAlgorithm'] == alg
    uid = r['UploadId']
    parts = []
    for n, (data, value) in enumerate(zip(bodies, sums), start=1):
        p = c.upload_part(UploadId=uid, Bucket=BUCKET, Key=key, PartNumber=n, Body=data, ChecksumAlgorithm=alg, **{name: value})
        assert p[name] == value, (alg, n, p)
        parts.append({'ETag': p['ETag'].strip('"'), name: p[name], 'PartNumber': n})
    done = c.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={'Parts': parts}, **{name: whole})
    assert done['ChecksumType'] == typ and done[name] == whole, done
    again = c.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={'Parts': parts}, **{name: whole})
    assert again['ETag'] == done['ETag'] and again[name] == whole, again
    if alg == 'SHA256':
        assert done['ETag'].strip('"') == 'b2add96cc9702bbf4efb0ccdfc6b7747-3', done['ETag']
    assert name not in c.head_object(Bucket=BUCKET, Key=key)
    h = c.head_object(Bucket=BUCKET, Key=key, ChecksumMode='ENABLED')
    assert h['ChecksumType'] == typ and h[name] == whole, h
    a = c.get_object_attributes(Bucket=BUCKET, Key=key, ObjectAttributes=['Checksum'])
    assert a['Checksum']['ChecksumType'] == typ and a['Checksum'][name] == whole, a
    for n, value in enumerate(sums, start=1):
        g = c.get_object(Bucket=BUCKET, Key=key, PartNumber=n)
        assert g['ChecksumType'] == typ and g[name] == value, (alg, n, g.get(name))
        assert body(g) == bodies[n - 1]
`);
  });
});
