/**
 * Fuzz cases for form upload (`POST /`, docs/development/kodo-protocol.md §4): valid requests in the Node SDK's and qiniu-js's field
 * orders, then the same requests mutated — bytes flipped, inserted or deleted in a delimiter, a part header or a
 * value; the body cut short (sent as a complete request); duplicate, missing and oversized fields; broken
 * Content-Types and boundaries; odd file names; a declared or real size over GRANARY_MAX_OBJECT_SIZE; clients
 * that vanish mid-body. Each case draws everything from its own seeded Rng and says what answer it may get.
 */
import { crc32 } from 'node:zlib';
import { qetag } from './etag.js';
import {
  BYTE_MUTATIONS,
  formSegments,
  joinSegments,
  mutateBytes,
  pickSegment,
  type Allowed,
  type Expect,
  type FormPart,
  type Rng,
  type Segment,
  type Wire,
} from './fuzz.js';
import { MiB, target, times, uploadAnswer, word, type Case, type Fuzzer } from './fuzz-upload.js';

const FILENAMES = ['upload.bin', 'photo.jpg', '数据 file.txt', 'a%22b%0D%0A.bin', 'x'];
const MIMES = ['application/octet-stream', 'text/plain', 'image/jpeg', 'application/json'];

/** A valid form upload and what it must get. */
interface FormInput {
  parts: FormPart[];
  content: Buffer;
  /** The key the object lands on. */
  key: string;
  hasCrc: boolean;
  status: Allowed;
  /** The `accept` field is present (a 200 then has that Content-Type). */
  accept: boolean;
}

/**
 * A valid form upload in one of the key modes of `target`: Node order (token, key, x:*, x-qn-meta-*, file, crc32)
 * or qiniu-js order (file, token, key, fname, crc32, x:*, x-qn-meta-*).
 */
function formInput(f: Fuzzer, label: string, sizes = [0, 1, 17, 512, 4096, 30000, 70000]): FormInput {
  const { rng } = f;
  const { content, key, token, status } = target(f, label, sizes);
  const order = rng.chance(0.5) ? 'node' : 'js';
  const hasCrc = order === 'node' || rng.chance(0.8);
  const vars: FormPart[] = Array.from({ length: rng.int(3) }, (_, j) => ({ name: `x:v${j}`, value: word(rng) }));
  const meta: FormPart[] = Array.from({ length: rng.int(3) }, (_, j) => ({ name: `x-qn-meta-m${j}`, value: word(rng) }));
  const accept: FormPart[] = rng.chance(0.1) ? [{ name: 'accept', value: rng.pick(['text/plain', 'application/json']) }] : [];
  const file: FormPart = { name: 'file', value: content, filename: rng.pick(FILENAMES), contentType: rng.pick(MIMES) };
  const crcPart: FormPart[] = hasCrc ? [{ name: 'crc32', value: String(crc32(content)) }] : [];
  const keyPart: FormPart[] = key !== undefined ? [{ name: 'key', value: key }] : [];
  const tokenPart: FormPart = { name: 'token', value: token };
  const fname: FormPart[] = rng.chance(0.7) ? [{ name: 'fname', value: `orig ${word(rng)}` }] : [];
  const parts =
    order === 'node'
      ? [tokenPart, ...keyPart, ...vars, ...meta, ...accept, file, ...crcPart]
      : [file, tokenPart, ...keyPart, ...fname, ...crcPart, ...vars, ...meta, ...accept];
  return { parts, content, key: key ?? qetag(content), hasCrc, status, accept: accept.length > 0 };
}

/** A boundary in the Node form-data style. */
const boundaryOf = (rng: Rng): string => `--------------------------${rng.hex(24)}`;

/** `POST /` with `body`: Content-Length or chunked (as the Node SDK), written in 1–3 pieces. */
function formWire(rng: Rng, body: Buffer, contentType: string | undefined): Wire {
  return {
    method: 'POST',
    path: '/',
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    body,
    framing: rng.chance(0.5) ? 'chunked' : 'length',
    pieces: rng.pick([1, 1, 1, 2, 3]),
  };
}

const multipartType = (boundary: string): string => `multipart/form-data; boundary=${boundary}`;

/** Sends the parts as a form upload with the given expectation. */
function sendForm(f: Fuzzer, parts: FormPart[], e: Expect, contentType?: (boundary: string) => string | undefined): Promise<unknown> {
  const boundary = boundaryOf(f.rng);
  const body = joinSegments(formSegments(parts, boundary));
  return f.send('form', formWire(f.rng, body, contentType ? contentType(boundary) : multipartType(boundary)), e);
}

/**
 * What a request may get once one value of `input` reads `now`: a changed token fails (unless only whitespace
 * around it changed), a changed crc32 fails (unless it still names the same number, or is empty, i.e. absent),
 * changed file bytes fail when a crc32 is sent; anything else may pass.
 */
function valueRule(input: FormInput, seg: Segment, now: Buffer): 'fail' | 'any' {
  if (seg.kind !== 'value') return 'any';
  const part = input.parts[seg.part] as FormPart;
  const text = now.toString('utf8');
  if (part.name === 'token') return text.trim() === String(part.value).trim() ? 'any' : 'fail';
  if (part.name === 'crc32') return text === '' || (/^\d{1,10}$/.test(text) && Number(text) === Number(part.value)) ? 'any' : 'fail';
  if (part.name === 'file' && input.hasCrc) return 'fail';
  return 'any';
}

const formBase: Case = async (f) => {
  const input = formInput(f, 'form');
  await sendForm(f, input.parts, {
    what: 'form: valid',
    status: input.status,
    on200: uploadAnswer(f, { key: input.key, content: input.content }),
    anyType200: input.accept,
  });
};

const formMutation: Case = async (f) => {
  const input = formInput(f, 'form-mut');
  const boundary = boundaryOf(f.rng);
  const segs = formSegments(input.parts, boundary);
  const i = pickSegment(segs, f.rng);
  const seg = segs[i] as Segment;
  const kind = f.rng.pick(BYTE_MUTATIONS);
  const bytes = mutateBytes(seg.bytes, f.rng, kind);
  segs[i] = { ...seg, bytes };
  const where = seg.part >= 0 ? `${seg.kind} of part ${(input.parts[seg.part] as FormPart).name}` : seg.kind;
  await f.send('form', formWire(f.rng, joinSegments(segs), multipartType(boundary)), {
    what: `form: ${kind} in the ${where}`,
    status: valueRule(input, seg, bytes),
    on200: uploadAnswer(f),
    anyType200: input.accept,
  });
};

/** The body cut at a random byte and sent as a complete request: only a cut after the close delimiter may pass. */
const formTruncation: Case = async (f) => {
  const input = formInput(f, 'form-cut');
  const boundary = boundaryOf(f.rng);
  const body = joinSegments(formSegments(input.parts, boundary));
  const closeEnd = body.length - 2; // after `--boundary--`, before the final CRLF
  const cut = f.rng.chance(0.05) ? closeEnd + f.rng.int(2) : f.rng.int(body.length);
  await f.send('form', formWire(f.rng, body.subarray(0, cut), multipartType(boundary)), {
    what: `form: body cut at ${cut} of ${body.length}`,
    status: cut >= closeEnd ? input.status : 'fail',
    on200: uploadAnswer(f, { key: input.key, content: input.content }),
    anyType200: input.accept,
  });
};

/** The parts of a valid Node-order upload of fresh bytes to a new key, for the hand-made cases. */
function plain(f: Fuzzer, label: string, size = 1000): { token: FormPart; key: FormPart; file: FormPart; crc: FormPart; content: Buffer } {
  const content = f.rng.bytes(size);
  return {
    token: { name: 'token', value: f.env.token },
    key: { name: 'key', value: `fz/${label}-${f.rng.hex(10)}` },
    file: { name: 'file', value: content, filename: 'f.bin', contentType: 'application/octet-stream' },
    crc: { name: 'crc32', value: String(crc32(content)) },
    content,
  };
}

/** A hand-made form case: the parts (from `plain`), an optional Content-Type builder, and what it may get. */
function special(label: string, status: Allowed, build: (p: ReturnType<typeof plain>, f: Fuzzer) => FormPart[], contentType?: (b: string) => string | undefined): Case {
  return async (f) => {
    const p = plain(f, label);
    const parts = build(p, f);
    const accept = parts.some((x) => x.name === 'accept');
    await sendForm(f, parts, { what: `form: ${label}`, status, on200: uploadAnswer(f), anyType200: accept }, contentType);
  };
}

const garbageToken: FormPart = { name: 'token', value: 'ak:not-a-signature:eyJ9' };
const big = (n: number): string => 'a'.repeat(n);
const manyFields = (n: number): FormPart[] => Array.from({ length: n }, (_, j) => ({ name: `x:f${j}`, value: String(j) }));

/** Duplicates, missing parts, huge fields and headers, broken Content-Types and boundaries, odd file names. */
const formSpecials: Case[] = [
  special('two tokens, the second garbage', 'any', (p) => [p.token, garbageToken, p.key, p.file, p.crc]),
  special('two tokens, the first garbage', 'any', (p) => [garbageToken, p.token, p.key, p.file, p.crc]),
  special('two keys, the second the kept key', 'any', (p, f) => [p.token, p.key, { name: 'key', value: f.env.keepKey }, p.file, p.crc]),
  special('two keys, the first the kept key', 'any', (p, f) => [p.token, { name: 'key', value: f.env.keepKey }, p.key, p.file, p.crc]),
  special('two file parts', 'any', (p, f) => [p.token, p.key, p.file, { ...p.file, value: f.rng.bytes(500) }, p.crc]),
  special('two file parts, the second first in the body', 'any', (p, f) => [p.token, p.key, { ...p.file, value: f.rng.bytes(500) }, p.file, p.crc]),
  special('the file part named data', 'fail', (p) => [p.token, p.key, { ...p.file, name: 'data' }, p.crc]),
  special('the file part named File', 'fail', (p) => [p.token, p.key, { ...p.file, name: 'File' }, p.crc]),
  // As Kodo: the part named file is the file whatever its filename (none here) and content type.
  special('the file sent as a plain field', 'ok', (p) => [p.token, p.key, { name: 'file', value: p.content }, p.crc]),
  special('a file part plus a field named file', 'any', (p) => [p.token, p.key, p.file, { name: 'file', value: 'text' }, p.crc]),
  special('crc32 twice, equal', 'ok', (p) => [p.token, p.key, p.file, p.crc, p.crc]),
  special('crc32 twice, the second wrong', 'any', (p) => [p.token, p.key, p.file, p.crc, { name: 'crc32', value: '1' }]),
  special('crc32 twice, the first wrong', 'any', (p) => [p.token, p.key, { name: 'crc32', value: '1' }, p.file, p.crc]),
  special('crc32 2^32', 'fail', (p) => [p.token, p.key, p.file, { name: 'crc32', value: '4294967296' }]),
  special('crc32 negative', 'fail', (p) => [p.token, p.key, p.file, { name: 'crc32', value: '-1' }]),
  special('crc32 with 11 digits', 'fail', (p) => [p.token, p.key, p.file, { name: 'crc32', value: '00000000001' }]),
  special('crc32 in hex', 'fail', (p) => [p.token, p.key, p.file, { name: 'crc32', value: `0x${Number(p.crc.value).toString(16)}` }]),
  special('no token', 'fail', (p) => [p.key, p.file, p.crc]),
  special('empty token', 'fail', (p) => [{ name: 'token', value: '' }, p.key, p.file, p.crc]),
  special('no parts at all', 'fail', () => []),
  special('a field over 1 MiB', 'fail', (p) => [p.token, p.key, { name: 'x:big', value: big(MiB + 1) }, p.file, p.crc]),
  special('a key over 1 MiB', 'fail', (p) => [p.token, { name: 'key', value: big(MiB + 1) }, p.file, p.crc]),
  special('a token over 1 MiB', 'fail', (p) => [{ name: 'token', value: big(MiB + 1) }, p.key, p.file, p.crc]),
  special('a key of 751 bytes', 'fail', (p) => [p.token, { name: 'key', value: big(751) }, p.file, p.crc]),
  special('1001 fields before the token', 'fail', (p) => [...manyFields(1001), p.token, p.key, p.file, p.crc]),
  special('1001 fields after the token', 'any', (p) => [p.token, p.key, ...manyFields(1001), p.file, p.crc]),
  special('1200 parts, the file last', 'any', (p) => [p.token, p.key, ...manyFields(1200), p.file]),
  special('a 64 KiB file name', 'any', (p) => [p.token, p.key, { ...p.file, filename: big(64 * 1024) }, p.crc]),
  special('a 64 KiB part Content-Type', 'any', (p) => [p.token, p.key, { ...p.file, contentType: `text/${big(64 * 1024)}` }, p.crc]),
  special('a 64 KiB field name', 'any', (p) => [p.token, p.key, { name: `x:${big(64 * 1024)}`, value: 'v' }, p.file, p.crc]),
  special('a non-UTF-8 file name', 'any', (p) => [p.token, p.key, { ...p.file, filename: Buffer.from([0xff, 0xfe, 0x41, 0xc3, 0x28]) }, p.crc]),
  special('an empty file name', 'any', (p) => [p.token, p.key, { ...p.file, filename: '' }, p.crc]),
  special('a file name with CR LF and quotes escaped', 'ok', (p) => [p.token, p.key, { ...p.file, filename: 'a%22b%0D%0Ac' }, p.crc]),
  special('a non-UTF-8 key', 'any', (p) => [p.token, { name: 'key', value: Buffer.from([0x66, 0x7a, 0x2f, 0xff, 0xfe]) }, p.file, p.crc]),
  special('a non-UTF-8 field value', 'any', (p) => [p.token, p.key, { name: 'x:v', value: Buffer.from([0xc3, 0x28, 0xa0]) }, p.file, p.crc]),
  special('a non-UTF-8 field name', 'any', (p) => [p.token, p.key, { name: 'x:\u00ff\u00fe', value: 'v' }, p.file, p.crc]),
  special('accept with a CR LF', 'any', (p) => [p.token, p.key, { name: 'accept', value: 'text/plain\r\nX-Evil: 1' }, p.file, p.crc]),
  special('accept with non-Latin-1 text', 'any', (p) => [p.token, p.key, { name: 'accept', value: 'text/中文' }, p.file, p.crc]),
  special('accept garbage', 'any', (p) => [p.token, p.key, { name: 'accept', value: ';;;=' }, p.file, p.crc]),
  special('no Content-Type', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => undefined),
  special('Content-Type without a boundary', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => 'multipart/form-data'),
  special('an empty boundary', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => 'multipart/form-data; boundary='),
  special('another boundary than the body', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => 'multipart/form-data; boundary=nope'),
  special('a quoted boundary', 'ok', (p) => [p.token, p.key, p.file, p.crc], (b) => `multipart/form-data; boundary="${b}"`),
  special('upper-case type and parameter', 'any', (p) => [p.token, p.key, p.file, p.crc], (b) => `MULTIPART/FORM-DATA; BOUNDARY=${b}`),
  special('two boundary parameters', 'any', (p) => [p.token, p.key, p.file, p.crc], (b) => `multipart/form-data; boundary=x; boundary=${b}`),
  special('multipart/mixed', 'fail', (p) => [p.token, p.key, p.file, p.crc], (b) => `multipart/mixed; boundary=${b}`),
  special('Content-Type garbage', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => ';;; = ; boundary'),
  special('Content-Type text/plain', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => 'text/plain'),
  special('Content-Type application/json', 'fail', (p) => [p.token, p.key, p.file, p.crc], () => 'application/json'),
  special('a 2 KiB boundary', 'any', (p) => [p.token, p.key, p.file, p.crc], () => `multipart/form-data; boundary=${big(2048)}`),
];

/** A form upload that declares a Content-Length over the object limit: refused (413) before the body is read. */
const formDeclaredTooLarge: Case = async (f) => {
  const input = formInput(f, 'form-declared');
  const boundary = boundaryOf(f.rng);
  const body = joinSegments(formSegments(input.parts, boundary));
  await f.send(
    'form',
    { method: 'POST', path: '/', headers: { 'content-type': multipartType(boundary) }, body: body.subarray(0, 1024), declare: 64 * MiB },
    { what: 'form: Content-Length 64 MiB', status: [413] },
  );
};

/** A form upload whose file really is one byte over GRANARY_MAX_OBJECT_SIZE (chunked, so nothing declares it). */
const formTooLarge: Case = async (f) => {
  const p = plain(f, 'form-oversize', f.env.maxObjectBytes + 1);
  const boundary = boundaryOf(f.rng);
  const body = joinSegments(formSegments([p.token, p.key, p.file], boundary));
  await f.send(
    'form',
    { method: 'POST', path: '/', headers: { 'content-type': multipartType(boundary) }, body, framing: 'chunked', pieces: 64 },
    { what: 'form: file over GRANARY_MAX_OBJECT_SIZE', status: [413] },
  );
};

/** A client that sends part of a form upload and vanishes; any answer that still arrives must be a refusal. */
const formDisconnect: Case = async (f) => {
  const input = formInput(f, 'form-gone', [30000, 300000, MiB]);
  const boundary = boundaryOf(f.rng);
  const body = joinSegments(formSegments(input.parts, boundary));
  const cutAt = 1 + f.rng.int(body.length - 3);
  await f.send('form', { ...formWire(f.rng, body, multipartType(boundary)), cutAt }, { what: `form: client gone after ${cutAt} of ${body.length} bytes`, status: 'fail' });
};

/** Every form case of the main phase (about 1000 requests). */
export function formCases(): Case[] {
  return [
    ...times(120, formBase),
    ...times(400, formMutation),
    ...times(250, formTruncation),
    ...formSpecials,
    ...times(3, formDeclaredTooLarge),
    formTooLarge,
  ];
}

/** Form uploads cut off by the client. */
export function formDisconnectCases(): Case[] {
  return times(60, formDisconnect);
}
