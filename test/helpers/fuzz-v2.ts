/**
 * Fuzz cases for resumable upload v2 (docs/development/kodo-protocol.md §6): initiate / part / complete / list / abort. Each case first
 * builds the upload it needs with valid requests (which must pass), then sends altered ones: buckets, object names,
 * uploadIds and methods; part numbers, Content-MD5s and bodies (a part 200 must carry the MD5 of the bytes sent);
 * mutated and hostile complete bodies (other parts are refused); list queries; abort and everything after it;
 * declared and real sizes over GRANARY_MAX_OBJECT_SIZE; clients that vanish mid-body.
 */
import { qetag, qetagV2 } from './etag.js';
import { BYTE_MUTATIONS, mutateBytes, mutateText, type Allowed, type Rng, type Wire } from './fuzz.js';
import {
  alterBody,
  auth,
  authVariant,
  b64,
  BLOCK,
  framing,
  ID_ALPHABET,
  intRule,
  intVariants,
  md5Hex,
  MiB,
  octet,
  target,
  times,
  uploadAnswer,
  word,
  type Case,
  type Fuzzer,
} from './fuzz-upload.js';

const uploadsPath = (bucket: string, objectName: string): string => `/buckets/${bucket}/objects/${objectName}/uploads`;
const objectNameOf = (key: string | undefined): string => (key === undefined ? '~' : b64(key));

interface Upload {
  base: string;
  id: string;
  token: string;
}

/** Initiates an upload of `key` (Node style: JSON type, empty body); undefined when refused. */
async function initiate(f: Fuzzer, key: string | undefined, token = f.env.token): Promise<Upload | undefined> {
  const base = uploadsPath(f.env.bucket, objectNameOf(key));
  const a = await f.send('v2-init', { method: 'POST', path: base, headers: { ...auth(token), 'content-type': 'application/json' } }, {
    what: 'initiate: valid',
    status: 'ok',
    on200: (j) => (typeof (j as { uploadId?: unknown }).uploadId === 'string' ? undefined : 'no uploadId'),
  });
  return a ? { base, id: a.uploadId as string, token } : undefined;
}

function partWire(f: Fuzzer, u: Upload, n: string | number, data: Buffer, md5: string | undefined, id = u.id): Wire {
  const headers: Record<string, string> = { ...auth(u.token), ...octet };
  if (md5 !== undefined) headers['content-md5'] = md5;
  return { method: 'PUT', path: `${u.base}/${id}/${n}`, headers, body: data, ...framing(f.rng) };
}

/** Checks a part 200: the MD5 of the bytes sent. */
const partAnswer = (sent: Buffer) => (json: unknown): string | undefined => {
  const j = json as { etag?: unknown; md5?: unknown } | null;
  if (typeof j?.etag !== 'string') return 'no etag';
  return j.md5 === md5Hex(sent) ? undefined : `md5 ${String(j.md5)} is not the MD5 of the ${sent.length} bytes sent`;
};

/** Uploads part `n` validly; its etag. */
async function part(f: Fuzzer, u: Upload, n: number, data: Buffer): Promise<string | undefined> {
  const md5 = f.rng.pick([md5Hex(data), undefined, Buffer.from(md5Hex(data), 'hex').toString('base64'), md5Hex(data).toUpperCase()]);
  const a = await f.send('v2-part', partWire(f, u, n, data, md5), { what: 'part: valid', status: 'ok', on200: partAnswer(data) });
  return a?.etag as string | undefined;
}

function completeWire(f: Fuzzer, u: Upload, body: string | Buffer, id = u.id, type = 'application/json'): Wire {
  return { method: 'POST', path: `${u.base}/${id}`, headers: { ...auth(u.token), 'content-type': type }, body: Buffer.from(body), ...framing(f.rng) };
}

/** The complete body of the Node SDK (every field) or of qiniu-js (parts and what is set). */
function completeBody(rng: Rng, parts: Array<{ partNumber: number; etag: string }>): Record<string, unknown> {
  if (rng.chance(0.5)) {
    return { parts, fname: `orig ${word(rng)}`, mimeType: 'application/octet-stream', customVars: { 'x:a': word(rng) }, metadata: { 'x-qn-meta-m': word(rng) } };
  }
  return { parts, ...(rng.chance(0.5) ? { fname: 'f.bin' } : {}), ...(rng.chance(0.3) ? { customVars: { 'x:b': '1' } } : {}) };
}


/** Uploads `content` as 1–3 parts with ascending (possibly gapped) numbers: the complete list and the pieces. */
async function withParts(f: Fuzzer, u: Upload, content: Buffer): Promise<{ list: Array<{ partNumber: number; etag: string }>; pieces: Buffer[] } | undefined> {
  const cuts = [...new Set([0, ...Array.from({ length: f.rng.int(3) }, () => f.rng.int(content.length)), content.length])].sort((a, b) => a - b);
  const pieces = cuts.slice(1).map((end, i) => content.subarray(cuts[i], end));
  const list: Array<{ partNumber: number; etag: string }> = [];
  let n = 0;
  for (const piece of pieces) {
    n += f.rng.chance(0.2) ? 2 + f.rng.int(3) : 1; // gaps are legal
    const etag = await part(f, u, n, piece);
    if (etag === undefined) return undefined;
    list.push({ partNumber: n, etag });
  }
  return { list, pieces };
}

/** A whole valid v2 upload: initiate, parts, list, complete. */
const v2Base: Case = async (f) => {
  const t = target(f, 'v2', [0, 1, 100, 5000, 70000]);
  const u = await initiate(f, t.key, t.token);
  if (!u) return;
  const up = await withParts(f, u, t.content);
  if (!up) return;
  await f.send('v2-list', { method: 'GET', path: `${u.base}/${u.id}`, headers: auth(u.token) }, {
    what: 'list: valid',
    status: 'ok',
    on200: (j) => ((j as { parts?: unknown[] }).parts?.length === up.list.length ? undefined : 'not every part listed'),
  });
  const hash = qetagV2(up.pieces);
  // The kept bytes in parts of other sizes than 4 MiB have another etag (the 0x9e form): insertOnly compares etags.
  const status: Allowed = t.mode === 'kSame' && hash !== qetag(t.content) ? [614] : t.status;
  await f.send('v2-complete', completeWire(f, u, JSON.stringify(completeBody(f.rng, up.list))), {
    what: `complete: valid (${t.mode})`,
    status,
    on200: uploadAnswer(f, { key: t.key ?? hash, content: t.content, hash }),
  });
};

/** A two-part upload whose first part is 4 MiB (the plain etag), and one with 1 MiB parts (the 0x9e etag). */
const v2Sized: Case[] = [
  [BLOCK, 1000],
  [MiB, MiB, 10],
].map((sizes) => async (f: Fuzzer) => {
  const key = `fz/v2-sized-${f.rng.hex(10)}`;
  const u = await initiate(f, key);
  if (!u) return;
  const pieces = sizes.map((n) => f.rng.bytes(n));
  const list: Array<{ partNumber: number; etag: string }> = [];
  for (let i = 0; i < pieces.length; i++) {
    const etag = await part(f, u, i + 1, pieces[i] as Buffer);
    if (!etag) return;
    list.push({ partNumber: i + 1, etag });
  }
  const content = Buffer.concat(pieces);
  await f.send('v2-complete', completeWire(f, u, JSON.stringify({ parts: list })), {
    what: `complete: parts of ${sizes.join('+')} bytes`,
    status: 'ok',
    on200: uploadAnswer(f, { key, content, hash: qetagV2(pieces) }),
  });
});

/** Initiate with an altered bucket, object name, method or token. */
const v2Init: Case = async (f) => {
  const { env, rng } = f;
  const key = `fz/init-${rng.hex(10)}`;
  const name = b64(key);
  const variants: Array<() => [string, Wire, Allowed]> = [
    () => {
      const bucket = mutateText(env.bucket, rng, rng.pick(BYTE_MUTATIONS));
      return [`bucket ${bucket}`, { method: 'POST', path: uploadsPath(bucket, name), headers: auth(env.token) }, 'fail'];
    },
    () => {
      const on = mutateText(name, rng, rng.pick(BYTE_MUTATIONS));
      return [`object name ${on}`, { method: 'POST', path: uploadsPath(env.bucket, on), headers: auth(env.token) }, 'any'];
    },
    () => {
      const on = rng.pick(['', '~~', 'not*b64', '%zz', b64(Buffer.from([0xff, 0xfe])), 'x'.repeat(20000), '=', '~', '..', '.']);
      // '' is the key "" (as the SDKs send it), '~' no key.
      const status: Allowed = on === '~' || on === '' ? 'ok' : on === '=' ? 'any' : 'fail';
      return [`object name ${JSON.stringify(on.slice(0, 40))}`, { method: 'POST', path: uploadsPath(env.bucket, on), headers: auth(env.token) }, status];
    },
    () => {
      const method = rng.pick(['PUT', 'GET', 'DELETE', 'PATCH']);
      return [`method ${method}`, { method, path: uploadsPath(env.bucket, name), headers: auth(env.token) }, 'fail'];
    },
    () => {
      const v = authVariant(rng, env.token);
      return [`Authorization ${v.what}`, { method: 'POST', path: uploadsPath(env.bucket, name), headers: v.headers }, v.status];
    },
    () => [`a token for another bucket`, { method: 'POST', path: uploadsPath(env.bucket, name), headers: auth(env.otherBucketToken) }, 'fail'],
    () => [`a bucket that does not exist`, { method: 'POST', path: uploadsPath('fuzz-other', name), headers: auth(env.otherBucketToken) }, 'fail'],
    () => [`a JSON body`, { method: 'POST', path: uploadsPath(env.bucket, name), headers: { ...auth(env.token), 'content-type': 'application/json' }, body: Buffer.from('{"x":') }, 'ok'],
  ];
  const [what, w, status] = rng.pick(variants)();
  await f.send('v2-init', w, {
    what: `initiate: ${what}`,
    status,
    on200: (j) => (typeof (j as { uploadId?: unknown }).uploadId === 'string' ? undefined : 'no uploadId'),
  });
};

/** Content-MD5 values: what they are and whether they match `data`. */
function md5Variant(rng: Rng, data: Buffer): [string, Allowed] {
  const hex = md5Hex(data);
  return rng.pick<[string, Allowed]>([
    ['xyz', 'fail'],
    ['0'.repeat(32), 'fail'],
    ['', 'ok'],
    [hex.toUpperCase(), 'ok'],
    [Buffer.from(hex, 'hex').toString('base64'), 'ok'],
    [Buffer.from(hex, 'hex').toString('base64').replace(/=+$/, ''), 'fail'],
    [`${hex}${hex}`, 'fail'],
    [` ${hex} `, 'ok'],
    [hex.slice(1), 'fail'],
    [mutateText(hex, rng, rng.pick(BYTE_MUTATIONS), '0123456789abcdef'), 'fail'],
  ]);
}

/** Part upload with an altered part number, Content-MD5, body, uploadId, path or Authorization. */
const v2Part: Case = async (f) => {
  const { rng } = f;
  const u = await initiate(f, `fz/part-${rng.hex(10)}`);
  if (!u) return;
  const data = rng.bytes(rng.pick([1, 100, 5000, 70000]));
  const variant = rng.int(6);
  if (variant === 0) {
    const n = intVariants(rng, 1 + rng.int(10000));
    await f.send('v2-part', partWire(f, u, n, data, md5Hex(data)), {
      what: `part: number ${JSON.stringify(n)}`,
      status: intRule(n, (x) => x >= 1 && x <= 10000),
      on200: partAnswer(data),
    });
  } else if (variant === 1) {
    const [md5, status] = md5Variant(rng, data);
    await f.send('v2-part', partWire(f, u, 1, data, md5), { what: `part: Content-MD5 ${JSON.stringify(md5)}`, status, on200: partAnswer(data) });
  } else if (variant === 2) {
    const { sent, how } = alterBody(rng, data);
    const md5 = rng.chance(0.5) ? md5Hex(data) : undefined;
    await f.send('v2-part', partWire(f, u, 1, sent, md5), {
      what: `part: body ${how}${md5 ? ' with the MD5 of the original' : ''}`,
      status: md5 ? 'fail' : sent.length > 0 ? 'ok' : 'any',
      on200: partAnswer(sent),
    });
  } else if (variant === 3) {
    const id = rng.chance(0.8) ? mutateText(u.id, rng, rng.pick(BYTE_MUTATIONS), ID_ALPHABET) : rng.pick(['', '.', '..', 'x'.repeat(20000)]);
    await f.send('v2-part', partWire(f, u, 1, data, md5Hex(data), id), { what: `part: uploadId ${id.slice(0, 60)}`, status: 'fail' });
  } else if (variant === 4) {
    const onBucket = rng.chance(0.5);
    const base = onBucket
      ? uploadsPath(mutateText(f.env.bucket, rng, rng.pick(BYTE_MUTATIONS)), u.base.split('/')[4] as string)
      : uploadsPath(f.env.bucket, mutateText(u.base.split('/')[4] as string, rng, rng.pick(BYTE_MUTATIONS)));
    await f.send('v2-part', partWire(f, { ...u, base }, 1, data, md5Hex(data)), { what: `part: path ${base}`, status: onBucket ? 'fail' : 'any', on200: partAnswer(data) });
  } else {
    const v = authVariant(rng, u.token);
    const w = partWire(f, u, 1, data, md5Hex(data));
    await f.send('v2-part', { ...w, headers: { ...v.headers, ...octet } }, { what: `part: Authorization ${v.what}`, status: v.status, on200: partAnswer(data) });
  }
};

/** What complete may get for a body: unparsable or other parts → refused; the same parts → may pass. */
function completeRule(body: Buffer, parts: unknown): 'fail' | 'any' {
  let j: unknown;
  try {
    j = JSON.parse(body.toString('utf8'));
  } catch {
    return 'fail';
  }
  if (!j || typeof j !== 'object') return 'fail';
  return JSON.stringify((j as { parts?: unknown }).parts) === JSON.stringify(parts) ? 'any' : 'fail';
}

/** Hostile complete bodies built around the real part list. */
function hostileComplete(list: Array<{ partNumber: number; etag: string }>): Array<[string, string, Allowed]> {
  const p = JSON.stringify(list);
  const first = list[0] as { partNumber: number; etag: string };
  const withPart = (extra: object): string => JSON.stringify({ parts: list, ...extra });
  return [
    ['not JSON', 'not json', 'fail'],
    ['empty', '', 'fail'],
    ['null', 'null', 'fail'],
    ['an array', '[]', 'fail'],
    ['no parts', '{}', 'fail'],
    ['parts null', '{"parts":null}', 'fail'],
    ['parts an object', '{"parts":{}}', 'fail'],
    ['parts a string', '{"parts":"x"}', 'fail'],
    ['parts of numbers', '{"parts":[1,2]}', 'fail'],
    ['a null part', '{"parts":[null]}', 'fail'],
    ['partNumber a string', JSON.stringify({ parts: [{ ...first, partNumber: String(first.partNumber) }] }), 'fail'],
    ['no partNumber', JSON.stringify({ parts: [{ etag: first.etag }] }), 'fail'],
    ['partNumber -1', JSON.stringify({ parts: [{ ...first, partNumber: -1 }] }), 'fail'],
    ['partNumber 0', JSON.stringify({ parts: [{ ...first, partNumber: 0 }] }), 'fail'],
    ['partNumber 1.5', JSON.stringify({ parts: [{ ...first, partNumber: 1.5 }] }), 'fail'],
    ['partNumber 1e400', `{"parts":[{"partNumber":1e400,"etag":${JSON.stringify(first.etag)}}]}`, 'fail'],
    ['partNumber 10001', JSON.stringify({ parts: [{ ...first, partNumber: 10001 }] }), 'fail'],
    ['a part twice', JSON.stringify({ parts: [first, first] }), 'fail'],
    ['parts descending', JSON.stringify({ parts: [...list].reverse().concat(list.length === 1 ? [first] : []) }), 'fail'],
    ['a wrong etag', JSON.stringify({ parts: [{ ...first, etag: `${first.etag}x` }] }), 'fail'],
    ['an etag that is a number', JSON.stringify({ parts: [{ ...first, etag: 1 }] }), 'fail'],
    ['10001 parts', JSON.stringify({ parts: Array.from({ length: 10001 }, (_, i) => ({ partNumber: i + 1, etag: 'x' })) }), 'fail'],
    ['nested 100000 deep', `{"parts":${'['.repeat(100000)}${']'.repeat(100000)}}`, 'fail'],
    ['fname a number', withPart({ fname: 123 }), 'any'],
    ['fname an object', withPart({ fname: {} }), 'any'],
    ['fname an array', withPart({ fname: ['a'] }), 'any'],
    ['fname true', withPart({ fname: true }), 'any'],
    ['mimeType a number', withPart({ mimeType: 123 }), 'any'],
    ['mimeType an object', withPart({ mimeType: { a: 1 } }), 'any'],
    ['mimeType with CR LF', withPart({ mimeType: 'text/plain\r\nX-Evil: 1' }), 'any'],
    ['customVars a string', withPart({ customVars: 'x' }), 'any'],
    ['customVars an array', withPart({ customVars: ['x:a'] }), 'any'],
    ['customVars nested', withPart({ customVars: { 'x:a': { deep: [1] } } }), 'any'],
    ['customVars null value', withPart({ customVars: { 'x:a': null } }), 'any'],
    ['customVars __proto__', `{"parts":${p},"customVars":{"__proto__":{"x:a":"1"}}}`, 'any'],
    ['metadata a number value', withPart({ metadata: { 'x-qn-meta-a': 1 } }), 'any'],
    ['metadata a string', withPart({ metadata: 'x' }), 'any'],
    ['metadata with 1000 entries', withPart({ metadata: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`x-qn-meta-m${i}`, 'v'])) }), 'any'],
    ['2 MiB of whitespace', `${' '.repeat(2 * MiB)}{"parts":${p}}`, 'ok'],
    ['a byte-order mark', `\uFEFF{"parts":${p}}`, 'fail'],
    ['only the first part', JSON.stringify({ parts: [first] }), 'ok'],
  ];
}

/** Complete with a mutated or hostile body, another Content-Type, an altered uploadId or path, twice. */
const v2Complete: Case = async (f) => {
  const { rng } = f;
  const key = `fz/complete-${rng.hex(10)}`;
  const u = await initiate(f, key);
  if (!u) return;
  const content = rng.bytes(rng.pick([1, 1000, 20000]));
  const up = await withParts(f, u, content);
  if (!up) return;
  const good = JSON.stringify(completeBody(rng, up.list));
  const variant = rng.int(5);
  if (variant === 0 || variant === 1) {
    const body = mutateBytes(Buffer.from(good), rng, rng.pick(BYTE_MUTATIONS));
    await f.send('v2-complete', completeWire(f, u, body), {
      what: `complete: body ${JSON.stringify(body.toString('latin1').slice(0, 120))}`,
      status: completeRule(body, up.list),
      on200: uploadAnswer(f, { key }),
    });
  } else if (variant === 2) {
    const [what, body, status] = rng.pick(hostileComplete(up.list));
    await f.send('v2-complete', completeWire(f, u, body), { what: `complete: ${what}`, status, on200: uploadAnswer(f, { key }) });
  } else if (variant === 3) {
    const type = rng.pick<[string, Allowed]>([
      ['text/plain', 'ok'],
      ['application/json; charset=utf-8', 'ok'],
      ['application/x-www-form-urlencoded', 'ok'],
      ['application/octet-stream', 'any'],
      ['multipart/form-data; boundary=x', 'any'],
      [';;;', 'any'],
    ]);
    await f.send('v2-complete', completeWire(f, u, good, u.id, type[0]), { what: `complete: Content-Type ${type[0]}`, status: type[1], on200: uploadAnswer(f, { key }) });
  } else {
    const id = mutateText(u.id, rng, rng.pick(BYTE_MUTATIONS), ID_ALPHABET);
    await f.send('v2-complete', completeWire(f, u, good, id), { what: `complete: uploadId ${id}`, status: 'fail' });
    const a = await f.send('v2-complete', completeWire(f, u, good), {
      what: 'complete: valid',
      status: 'ok',
      on200: uploadAnswer(f, { key, content, hash: qetagV2(up.pieces) }),
    });
    if (a) await f.send('v2-complete', completeWire(f, u, good), { what: 'complete: a second time', status: [612] });
  }
};

/** List parts with odd queries (always answered), or an altered uploadId (refused). */
const v2List: Case = async (f) => {
  const { rng } = f;
  const u = await initiate(f, `fz/list-${rng.hex(10)}`);
  if (!u) return;
  if (!(await withParts(f, u, rng.bytes(3000)))) return;
  if (rng.chance(0.25)) {
    const id = mutateText(u.id, rng, rng.pick(BYTE_MUTATIONS), ID_ALPHABET);
    await f.send('v2-list', { method: 'GET', path: `${u.base}/${id}`, headers: auth(u.token) }, { what: `list: uploadId ${id}`, status: 'fail' });
    return;
  }
  const query = rng.pick([
    'max-parts=abc',
    'max-parts=-1',
    'max-parts=0',
    'max-parts=1e9',
    'max-parts=1&max-parts=2',
    'part-number-marker=abc',
    'part-number-marker=-5',
    'part-number_marker=1',
    'max-parts=1&part-number-marker=1',
    'max-parts[]=1',
    '%zz=1',
    '&&&==',
    mutateText('max-parts=2&part-number-marker=1', rng, rng.pick(BYTE_MUTATIONS)),
  ]);
  await f.send('v2-list', { method: 'GET', path: `${u.base}/${u.id}?${query}`, headers: auth(u.token) }, {
    what: `list: query ${query}`,
    status: 'ok',
    on200: (j) => (Array.isArray((j as { parts?: unknown }).parts) ? undefined : 'no parts array'),
  });
};

/** Abort with an altered uploadId, then for real, then everything again on the aborted upload (612). */
const v2Abort: Case = async (f) => {
  const { rng } = f;
  const u = await initiate(f, `fz/abort-${rng.hex(10)}`);
  if (!u) return;
  const data = rng.bytes(2000);
  const etag = await part(f, u, 1, data);
  if (!etag) return;
  const del = (id: string): Wire => ({ method: 'DELETE', path: `${u.base}/${id}`, headers: auth(u.token) });
  const id = mutateText(u.id, rng, rng.pick(BYTE_MUTATIONS), ID_ALPHABET);
  await f.send('v2-abort', del(id), { what: `abort: uploadId ${id}`, status: 'fail' });
  await f.send('v2-abort', del(u.id), { what: 'abort: valid', status: 'ok', emptyOk: true });
  await f.send('v2-abort', del(u.id), { what: 'abort: a second time', status: [612] });
  await f.send('v2-part', partWire(f, u, 2, data, undefined), { what: 'part: into an aborted upload', status: [612] });
  await f.send('v2-complete', completeWire(f, u, JSON.stringify({ parts: [{ partNumber: 1, etag }] })), { what: 'complete: an aborted upload', status: [612] });
};

/** Declared and real sizes over GRANARY_MAX_OBJECT_SIZE. */
const v2Large: Case[] = [
  async (f) => {
    const u = await initiate(f, `fz/big-${f.rng.hex(10)}`);
    if (!u) return;
    await f.send('v2-part', { ...partWire(f, u, 1, f.rng.bytes(1024), undefined), framing: 'length', declare: f.env.maxObjectBytes + 1 }, { what: 'part: Content-Length over the object limit', status: [413] });
  },
  async (f) => {
    const u = await initiate(f, `fz/big-${f.rng.hex(10)}`);
    if (!u) return;
    const body = f.rng.bytes(f.env.maxObjectBytes + 1);
    await f.send('v2-part', { ...partWire(f, u, 1, body, undefined), framing: 'chunked', pieces: 64 }, { what: 'part: a part over the object limit', status: [413] });
  },
  async (f) => {
    const u = await initiate(f, `fz/big-${f.rng.hex(10)}`);
    if (!u) return;
    await f.send('v2-complete', { ...completeWire(f, u, '{"parts":'), framing: 'length', declare: 64 * MiB }, { what: 'complete: Content-Length 64 MiB', status: [413] });
  },
];

/** v2 requests cut off by the client. */
const v2Disconnects: Case[] = [
  ...times(12, async (f) => {
    const u = await initiate(f, `fz/gone-${f.rng.hex(10)}`);
    if (!u) return;
    const body = f.rng.bytes(f.rng.pick([100000, MiB]));
    await f.send('v2-part', { ...partWire(f, u, 1, body, md5Hex(body)), cutAt: 1 + f.rng.int(body.length - 1) }, { what: 'part: client gone', status: 'fail' });
  }),
  ...times(6, async (f) => {
    const u = await initiate(f, `fz/gone-${f.rng.hex(10)}`);
    if (!u) return;
    const up = await withParts(f, u, f.rng.bytes(3000));
    if (!up) return;
    const body = Buffer.from(`${' '.repeat(200000)}${JSON.stringify({ parts: up.list })}`);
    await f.send('v2-complete', { ...completeWire(f, u, body), cutAt: 1 + f.rng.int(body.length - 1) }, { what: 'complete: client gone', status: 'fail' });
  }),
];

/** Every v2 case of the main phase. */
export function v2Cases(): Case[] {
  return [
    ...times(40, v2Base),
    ...v2Sized,
    ...times(60, v2Init),
    ...times(150, v2Part),
    ...times(110, v2Complete),
    ...times(40, v2List),
    ...times(30, v2Abort),
    ...v2Large,
  ];
}

export function v2DisconnectCases(): Case[] {
  return v2Disconnects;
}
