/**
 * Fuzzing the S3 listener (docs/development/kodo-protocol.md §18.3, §18.4) from fixed seeds, about 700 requests:
 * SigV4 Authorization headers, x-amz-date and x-amz-content-sha256 values mutated; aws-chunked bodies (signed and
 * unsigned with trailers) with bytes flipped, inserted or deleted anywhere, or cut short; DeleteObjects and
 * CreateBucket XML documents mutated, replaced by random bytes, or made hostile (entity declarations, deep
 * nesting, oversized).
 *
 * Oracle for every answer: never a 5xx but 501, an error answer is an S3 XML `<Error>` with a `<Code>`, and a 200 to
 * a chunked PUT of KEEP_KEY only when what was stored is still the original content (a mutation that kept the
 * framing and every signature valid). After the run: the server answers, KEEP_KEY holds its bytes, the staging
 * directory is empty.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as http from 'node:http';
import { CreateBucketCommand, GetObjectCommand, ListBucketsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { BYTE_MUTATIONS, mutateBytes, mutateText, Rng, runPool, send, Tally, type Outcome, type Wire } from '../helpers/fuzz.js';
import { chunkedBody, crc32Base64, payloadHash, s3Client, signV4 } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { stagingFiles, waitUntil } from '../helpers/upload.js';

const SEED = 0x53334655;
const BUCKET = 's3-fuzz';
const KEEP_KEY = 'keep.bin';
const KEEP = Buffer.from(Array.from({ length: 40_000 }, (_, i) => (i * 7) % 251));
const WIDTH = 4;
const TIMEOUT_MS = 10_000;

let s: TestServer;
let s3: S3Client;
let host: string;
let port: number;
const agent = new http.Agent({ keepAlive: true, maxSockets: WIDTH });
const tally = new Tally();
const problems: string[] = [];

beforeAll(async () => {
  s = await startTestServer({ GRANARY_MAX_OBJECT_SIZE: String(1024 * 1024) });
  const url = new URL(s.s3Url!);
  host = url.host;
  port = Number(url.port);
  s3 = s3Client(s.s3Url!, AK, SK);
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEEP_KEY, Body: KEEP }));
});

afterAll(async () => {
  agent.destroy();
  s3?.destroy();
  await s?.stop();
});

/** Judges one outcome (see the module comment); `ok200` says whether a 200 is acceptable. */
function judge(route: string, what: string, o: Outcome, ok200: boolean): void {
  const a = o.kind === 'answer' ? o : o.kind === 'cut' ? o.answer : undefined;
  tally.add(route, o.kind === 'answer' ? String(o.status) : o.kind);
  if (o.kind === 'timeout') problems.push(`${route}: ${what}: no answer (hang)`);
  if (o.kind === 'error') problems.push(`${route}: ${what}: ${o.message}`);
  if (!a) return;
  const head = `${route}: ${what} → ${a.status} ${a.text.slice(0, 160)}`;
  if (a.status >= 500 && a.status !== 501) problems.push(`5xx: ${head}`);
  if (a.status === 200 && !ok200) problems.push(`unexpected 200: ${head}`);
  if (a.status >= 400 && !/<Error><Code>[A-Za-z0-9]+<\/Code>/.test(a.text)) problems.push(`not an S3 XML error: ${head}`);
}

/** A SigV4-signed wire request (the body hashed, or `hash` as the payload hash). */
function signed(method: string, path: string, body: Buffer, headers: Record<string, string> = {}, hash?: string): Wire {
  const sg = signV4({ method, path, host, headers, payloadHash: hash ?? payloadHash(body), ak: AK, sk: SK });
  return { method, path, headers: sg.headers, body };
}

describe('fuzzing the S3 listener', () => {
  it('SigV4 headers: mutated Authorization, x-amz-date and x-amz-content-sha256', async () => {
    const cases = Array.from({ length: 240 }, (_, i) => i);
    await runPool(cases, WIDTH, async (i) => {
      const rng = Rng.derive(SEED, `sigv4-${i}`);
      const put = rng.chance(0.5);
      const body = Buffer.from(put ? `body ${i}` : '');
      const w = signed(put ? 'PUT' : 'GET', `/${BUCKET}/${put ? `sig/${i}` : KEEP_KEY}`, body);
      const name = rng.pick(['authorization', 'authorization', 'x-amz-date', 'x-amz-content-sha256']);
      const headers = { ...w.headers } as Record<string, string>;
      const kind = rng.pick(BYTE_MUTATIONS);
      const random = rng.chance(0.1);
      // Random bytes as header content: only what an HTTP client can send (no controls).
      headers[name] = random
        ? rng.bytes(1 + rng.int(200)).toString('latin1').replace(/[^\t\x20-\x7e\x80-\xff]/g, ' ')
        : mutateText(headers[name]!, rng, kind, 'AWS4-HMAC-SHA256 ,=/;0123456789abcdefXZ');
      const o = await send({ port, agent }, { ...w, headers }, TIMEOUT_MS);
      // A mutation may leave the request valid (a space after a comma): then it is served.
      judge('sigv4', `${name} ${random ? 'random' : kind} #${i}`, o, true);
    });
  });

  it('aws-chunked bodies: signed and unsigned-with-trailer framing mutated or cut', async () => {
    const cases = Array.from({ length: 240 }, (_, i) => i);
    await runPool(cases, WIDTH, async (i) => {
      const rng = Rng.derive(SEED, `chunked-${i}`);
      const signedMode = rng.chance(0.5);
      const mode = signedMode ? 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD' : 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';
      const headers: Record<string, string> = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(KEEP.length) };
      if (!signedMode) headers['x-amz-trailer'] = 'x-amz-checksum-crc32';
      const path = `/${BUCKET}/${KEEP_KEY}`;
      const sg = signV4({ method: 'PUT', path, host, headers, payloadHash: mode, ak: AK, sk: SK });
      const valid = chunkedBody(KEEP, 8192, signedMode ? { signed: sg } : { trailers: { 'x-amz-checksum-crc32': crc32Base64(KEEP) } });
      const cut = rng.chance(0.15);
      const kind = rng.pick(BYTE_MUTATIONS);
      const body = cut ? valid.subarray(0, rng.int(valid.length)) : mutateBytes(valid, rng, kind);
      const w: Wire = { method: 'PUT', path, headers: sg.headers, body, pieces: 1 + rng.int(4) };
      const o = await send({ port, agent }, w, TIMEOUT_MS);
      // A 200 is acceptable only if the content stored is still KEEP (checked at the end: KEEP_KEY never changes).
      judge('chunked', `${signedMode ? 'signed' : 'unsigned'} ${cut ? 'cut' : kind} #${i}`, o, true);
    });
  });

  it('XML bodies: DeleteObjects and CreateBucket documents mutated, random or hostile', async () => {
    const deleteDoc = '<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key>gone/a</Key></Object><Object><Key>gone/&amp;b</Key></Object></Delete>';
    const createDoc = '<CreateBucketConfiguration><LocationConstraint>cn-east-1</LocationConstraint></CreateBucketConfiguration>';
    const hostile = [
      '<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><Delete><Object><Key>&c;</Key></Object></Delete>',
      '<!DOCTYPE d SYSTEM "file:///etc/passwd"><Delete><Object><Key>x</Key></Object></Delete>',
      `${'<a>'.repeat(5000)}${'</a>'.repeat(5000)}`,
      `<Delete>${'<Object><Key>k</Key></Object>'.repeat(1001)}</Delete>`,
      `<Delete><Object><Key>${'k'.repeat(3 * 1024 * 1024)}</Key></Object></Delete>`,
      '<Delete><Object><Key></Key></Object></Delete>',
      '<Delete><Object>text</Object></Delete>',
      '\uFEFF<Delete><Object><Key>bom</Key></Object></Delete>',
    ];
    const cases = Array.from({ length: 220 }, (_, i) => i);
    await runPool(cases, WIDTH, async (i) => {
      const rng = Rng.derive(SEED, `xml-${i}`);
      const create = rng.chance(0.3);
      let body: Buffer;
      let what: string;
      if (i < hostile.length) {
        body = Buffer.from(hostile[i]!);
        what = `hostile #${i}`;
      } else if (rng.chance(0.1)) {
        body = rng.bytes(rng.int(400));
        what = `random #${i}`;
      } else {
        const kind = rng.pick(BYTE_MUTATIONS);
        body = mutateBytes(Buffer.from(create ? createDoc : deleteDoc), rng, kind, rng.chance(0.5) ? '<>/&;"\'= abcKey!-?[]' : undefined);
        what = `${kind} #${i}`;
      }
      const isCreate = create && i >= hostile.length;
      const w = signed(isCreate ? 'PUT' : 'POST', isCreate ? `/fuzz-bucket-${i}` : `/${BUCKET}?delete`, body, { 'content-type': 'application/xml' });
      const o = await send({ port, agent }, w, TIMEOUT_MS);
      judge(isCreate ? 'create-xml' : 'delete-xml', what, o, true);
    });
  });

  it('leaves a working server, KEEP_KEY intact and no staging files', async () => {
    console.log(tally.summary());
    expect(problems).toEqual([]);
    const list = await s3.send(new ListBucketsCommand({}));
    expect(list.Buckets?.some((b) => b.Name === BUCKET)).toBe(true);
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: KEEP_KEY }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(KEEP)).toBe(true);
    await waitUntil(async () => (await stagingFiles(s)).length === 0, 'the staging directory is empty', 10_000);
  });
});
