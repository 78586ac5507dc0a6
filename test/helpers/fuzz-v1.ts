/**
 * Fuzz cases for resumable upload v1 (docs/development/kodo-protocol.md §5): mkblk / bput / mkfile. Each case first builds the state it
 * needs with valid requests (which must pass), then sends one altered request: block sizes, ctxs, offsets, bodies
 * (a 200 must carry the CRC-32, offset and SHA-1 of the bytes actually sent), ctx lists (a changed ctx is refused),
 * mkfile paths and sizes, Authorization headers and Content-Types, declared sizes over the limits, and clients that
 * vanish mid-body.
 */
import { crc32 } from 'node:zlib';
import { qetag } from './etag.js';
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
  MiB,
  octet,
  sha1b64,
  target,
  times,
  uploadAnswer,
  word,
  type Case,
  type Fuzzer,
} from './fuzz-upload.js';

/** Checks a mkblk/bput 200: the CRC-32 and offset of the bytes sent, the SHA-1 of the block so far. */
function blockAnswer(sent: Buffer, soFar: Buffer): (json: unknown) => string | undefined {
  return (json) => {
    const j = json as { ctx?: unknown; crc32?: unknown; offset?: unknown; checksum?: unknown } | null;
    if (typeof j?.ctx !== 'string') return 'no ctx';
    if (j.crc32 !== crc32(sent)) return `crc32 ${String(j.crc32)} is not the CRC-32 of the ${sent.length} bytes sent`;
    if (j.offset !== soFar.length) return `offset ${String(j.offset)} is not ${soFar.length}`;
    if (j.checksum !== sha1b64(soFar)) return 'checksum is not the SHA-1 of the block so far';
    return undefined;
  };
}

function mkblkWire(f: Fuzzer, size: string | number, body: Buffer, token = f.env.token): Wire {
  return { method: 'POST', path: `/mkblk/${size}`, headers: { ...auth(token), ...octet }, body, ...framing(f.rng) };
}

function bputWire(f: Fuzzer, ctx: string, offset: string | number, body: Buffer, token = f.env.token): Wire {
  return { method: 'POST', path: `/bput/${ctx}/${offset}`, headers: { ...auth(token), ...octet }, body, ...framing(f.rng) };
}

/** mkblk with the whole block (or its first `first` bytes); the ctx, or undefined when refused. */
async function mkblk(f: Fuzzer, block: Buffer, first = block.length, token = f.env.token): Promise<string | undefined> {
  const chunk = block.subarray(0, first);
  const a = await f.send('mkblk', mkblkWire(f, block.length, chunk, token), { what: 'mkblk: valid', status: 'ok', on200: blockAnswer(chunk, chunk) });
  return a?.ctx as string | undefined;
}

/** The path of mkfile: size, then name/value pairs with values in URL-safe base64. */
function mkfilePath(size: string | number, params: Array<[string, string]>): string {
  return `/mkfile/${size}${params.map(([n, v]) => `/${n}/${b64(v)}`).join('')}`;
}

function mkfileWire(f: Fuzzer, path: string, ctxList: string | Buffer, token = f.env.token): Wire {
  const type = f.rng.chance(0.5) ? 'text/plain' : 'application/octet-stream';
  return { method: 'POST', path, headers: { ...auth(token), 'content-type': type }, body: Buffer.from(ctxList), ...framing(f.rng) };
}

/** The mkfile parameters of the SDKs in a random order: key, fname, mimeType, x: variables, metadata. */
function mkfileParams(rng: Rng, key: string | undefined): Array<[string, string]> {
  const params: Array<[string, string]> = [];
  if (key !== undefined) params.push(['key', key]);
  if (rng.chance(0.7)) params.push(['fname', `orig ${word(rng)}`]);
  if (rng.chance(0.7)) params.push(['mimeType', rng.pick(['application/octet-stream', 'text/plain', 'image/png'])]);
  for (let j = rng.int(3); j > 0; j--) params.push([`x:v${j}`, word(rng)]);
  for (let j = rng.int(3); j > 0; j--) params.push([`x-qn-meta-m${j}`, word(rng)]);
  for (let i = params.length - 1; i > 0; i--) {
    const k = rng.int(i + 1);
    [params[i], params[k]] = [params[k] as [string, string], params[i] as [string, string]];
  }
  return params;
}

/** A whole valid v1 upload: mkblk (+ bput chunks) per block, then mkfile. */
const v1Base: Case = async (f) => {
  const t = target(f, 'v1', [0, 1, 100, 5000, 70000]);
  const { content } = t;
  const ctxs: string[] = [];
  if (content.length > 0) {
    // At most 6 chunks: every bput answers the SHA-1 of the block so far, re-reading the chunks before it.
    const chunk = f.rng.chance(0.5) ? content.length : Math.max(f.rng.pick([1000, 4096, 33333]), Math.ceil(content.length / 6));
    const first = content.subarray(0, chunk);
    let a = await f.send('mkblk', mkblkWire(f, content.length, first, t.token), { what: 'mkblk: valid', status: 'ok', on200: blockAnswer(first, first) });
    while (a && (a.offset as number) < content.length) {
      const off = a.offset as number;
      const next = content.subarray(off, off + chunk);
      a = await f.send('bput', bputWire(f, a.ctx as string, off, next, t.token), {
        what: 'bput: valid',
        status: 'ok',
        on200: blockAnswer(next, content.subarray(0, off + next.length)),
      });
    }
    if (!a) return;
    ctxs.push(a.ctx as string);
  }
  await f.send('mkfile', mkfileWire(f, mkfilePath(content.length, mkfileParams(f.rng, t.key)), ctxs.join(','), t.token), {
    what: `mkfile: valid (${t.mode})`,
    status: t.status,
    on200: uploadAnswer(f, { key: t.key ?? qetag(content), content }),
  });
};

/** A file of one full 4 MiB block and a short one: the multi-block path of mkfile. */
const v1TwoBlocks: Case = async (f) => {
  const content = f.rng.bytes(BLOCK + 1000);
  const b1 = content.subarray(0, BLOCK);
  let a = await f.send('mkblk', mkblkWire(f, BLOCK, b1.subarray(0, MiB)), { what: 'mkblk: valid', status: 'ok', on200: blockAnswer(b1.subarray(0, MiB), b1.subarray(0, MiB)) });
  if (!a) return;
  a = await f.send('bput', bputWire(f, a.ctx as string, MiB, b1.subarray(MiB)), { what: 'bput: valid', status: 'ok', on200: blockAnswer(b1.subarray(MiB), b1) });
  const c2 = await mkblk(f, content.subarray(BLOCK));
  if (!a || !c2) return;
  const key = `fz/v1-two-${f.rng.hex(10)}`;
  await f.send('mkfile', mkfileWire(f, mkfilePath(content.length, [['key', key]]), `${a.ctx as string},${c2}`), {
    what: 'mkfile: two blocks',
    status: 'ok',
    on200: uploadAnswer(f, { key, content }),
  });
};

/** mkblk with a cut or altered body: a 200 must describe the bytes actually sent. */
const mkblkBody: Case = async (f) => {
  const block = f.rng.bytes(f.rng.pick([1, 100, 5000, 70000]));
  const size = block.length + f.rng.pick([0, 0, 100]);
  const { sent, how } = alterBody(f.rng, block);
  const fits = sent.length > 0 && sent.length <= size;
  await f.send('mkblk', mkblkWire(f, size, sent), { what: `mkblk: body ${how}`, status: fits ? 'ok' : 'fail', on200: blockAnswer(sent, sent) });
};

/** mkblk with an odd block size in the path. */
const mkblkSize: Case = async (f) => {
  const body = f.rng.bytes(f.rng.pick([1, 10, 1000]));
  const text = intVariants(f.rng, body.length);
  await f.send('mkblk', mkblkWire(f, text, body), {
    what: `mkblk: block size ${JSON.stringify(text)}`,
    status: intRule(text, (n) => n >= body.length && n >= 1 && n <= BLOCK),
    on200: blockAnswer(body, body),
  });
};

/** mkblk with a bad Authorization header. */
const mkblkAuth: Case = async (f) => {
  const body = f.rng.bytes(100);
  const v = authVariant(f.rng, f.env.token);
  await f.send('mkblk', { ...mkblkWire(f, body.length, body), headers: { ...v.headers, ...octet } }, { what: `mkblk: Authorization ${v.what}`, status: v.status, on200: blockAnswer(body, body) });
};

/** mkblk with other Content-Types: chunk bodies stream whatever their type. */
const mkblkType: Case = async (f) => {
  const body = f.rng.bytes(100);
  // Types fastify cannot parse at all are refused (400) before the route; every parsable one streams.
  const [type, status] = f.rng.pick<[string, Allowed]>([
    ['text/plain', 'ok'],
    ['application/json', 'ok'],
    ['application/x-www-form-urlencoded', 'ok'],
    ['multipart/form-data; boundary=x', 'ok'],
    [';;;', 'any'],
    ['', 'any'],
    ['a/b; c="', 'any'],
  ]);
  await f.send('mkblk', { ...mkblkWire(f, body.length, body), headers: { ...auth(f.env.token), 'content-type': type } }, {
    what: `mkblk: Content-Type ${JSON.stringify(type)}`,
    status,
    on200: blockAnswer(body, body),
  });
};

/** A block started with `first` of its `size` bytes: its ctx. */
async function startBlock(f: Fuzzer, size: number, first: number): Promise<{ block: Buffer; ctx: string } | undefined> {
  const block = f.rng.bytes(size);
  const ctx = await mkblk(f, block, first);
  return ctx === undefined ? undefined : { block, ctx };
}

/** bput with an altered ctx: always 701 (or 400/404/414 for one the router cannot take). */
const bputCtx: Case = async (f) => {
  const b = await startBlock(f, 2000, 1000);
  if (!b) return;
  const hostile = ['', '.', '..', 'a.b.c', 'x'.repeat(20000), `${b.ctx}.x`, `.${b.ctx}`, b.ctx.split('.')[0] as string, `${b64('{"b":"x","o":1000,"e":99999999999}')}.AAAAAAAAAAAAAAAAAAAAAA`];
  const ctx = f.rng.chance(0.2) ? f.rng.pick(hostile) : mutateText(b.ctx, f.rng, f.rng.pick(BYTE_MUTATIONS), ID_ALPHABET);
  const chunk = b.block.subarray(1000);
  await f.send('bput', bputWire(f, ctx, 1000, chunk), { what: `bput: ctx ${JSON.stringify(ctx.slice(0, 80))}`, status: 'fail' });
};

/** bput with an odd offset: only the block's current offset, written as plain digits, passes. */
const bputOffset: Case = async (f) => {
  const b = await startBlock(f, 2000, 1000);
  if (!b) return;
  const text = intVariants(f.rng, 1000);
  const chunk = b.block.subarray(1000);
  await f.send('bput', bputWire(f, b.ctx, text, chunk), {
    what: `bput: offset ${JSON.stringify(text)}`,
    status: intRule(text, (n) => n === 1000),
    on200: blockAnswer(chunk, b.block),
  });
};

/** bput with a cut or altered chunk: a 200 describes the bytes sent; more than the block's rest is refused. */
const bputBody: Case = async (f) => {
  const b = await startBlock(f, 2000, 1000);
  if (!b) return;
  const { sent, how } = alterBody(f.rng, b.block.subarray(1000));
  const fits = sent.length > 0 && sent.length <= 1000;
  await f.send('bput', bputWire(f, b.ctx, 1000, sent), {
    what: `bput: body ${how}`,
    status: fits ? 'ok' : 'fail',
    on200: blockAnswer(sent, Buffer.concat([b.block.subarray(0, 1000), sent])),
  });
};

/** The same bput twice (a replayed ctx), then a bput into the complete block. */
const bputReplay: Case = async (f) => {
  const b = await startBlock(f, 2000, 1000);
  if (!b) return;
  const chunk = b.block.subarray(1000);
  const a = await f.send('bput', bputWire(f, b.ctx, 1000, chunk), { what: 'bput: valid', status: 'ok', on200: blockAnswer(chunk, b.block) });
  await f.send('bput', bputWire(f, b.ctx, 1000, chunk), { what: 'bput: replayed ctx', status: 'fail' });
  if (a) await f.send('bput', bputWire(f, a.ctx as string, 2000, f.rng.bytes(10)), { what: 'bput: past the end of the block', status: 'fail' });
};

/** A complete one-block upload in progress: content, ctx and a valid mkfile path. */
async function readyFile(f: Fuzzer): Promise<{ content: Buffer; ctx: string; key: string; path: string } | undefined> {
  const content = f.rng.bytes(f.rng.pick([1, 500, 20000]));
  const ctx = await mkblk(f, content);
  if (ctx === undefined) return undefined;
  const key = `fz/mkfile-${f.rng.hex(10)}`;
  return { content, ctx, key, path: mkfilePath(content.length, [['key', key], ['fname', 'f.bin']]) };
}

/** The ctxs the server reads from a mkfile body (split on commas, trimmed, empties dropped). */
const ctxTokens = (body: Buffer): string[] =>
  body
    .toString('utf8')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');

/** mkfile with a byte-mutated ctx list: passes only when it still names exactly the same ctxs. */
const mkfileList: Case = async (f) => {
  const r = await readyFile(f);
  if (!r) return;
  const list = Buffer.from(f.rng.chance(0.3) ? ` ${r.ctx}, ` : r.ctx);
  const body = mutateBytes(list, f.rng, f.rng.pick(BYTE_MUTATIONS), f.rng.chance(0.5) ? `${ID_ALPHABET}, \t\r\n` : undefined);
  const same = JSON.stringify(ctxTokens(body)) === JSON.stringify([r.ctx]);
  await f.send('mkfile', mkfileWire(f, r.path, body), {
    what: `mkfile: ctx list ${JSON.stringify(body.toString('latin1').slice(0, 80))}`,
    status: same ? 'ok' : 'fail',
    on200: uploadAnswer(f, { key: r.key, content: r.content }),
  });
};

/** mkfile with a hostile ctx list: empty, only commas, thousands of entries, huge, repeated, incomplete blocks. */
const mkfileHostile: Case[] = [
  ['empty', () => ''],
  ['only commas', () => ',,,,'],
  ['the ctx twice', (ctx: string) => `${ctx},${ctx}`],
  ['10000 garbage entries', () => Array.from({ length: 10000 }, (_, i) => `c${i}.x`).join(',')],
  ['one 1 MiB entry', () => 'a'.repeat(MiB)],
  ['JSON', (ctx: string) => JSON.stringify([ctx])],
  ['non-UTF-8 bytes', (ctx: string) => Buffer.concat([Buffer.from(ctx), Buffer.from([0xff, 0xfe])]).toString('latin1')],
  ['the ctx and garbage', (ctx: string) => `${ctx},garbage`],
  ['NUL bytes', (ctx: string) => `${ctx}\u0000`],
].map(([label, build]) => async (f: Fuzzer) => {
  const r = await readyFile(f);
  if (!r) return;
  const list = (build as (ctx: string) => string)(r.ctx);
  await f.send('mkfile', mkfileWire(f, r.path, Buffer.from(list, 'latin1')), { what: `mkfile: ctx list ${label as string}`, status: 'fail' });
});

/** mkfile whose ctx names an incomplete block: 400. */
const mkfileIncomplete: Case = async (f) => {
  const b = await startBlock(f, 2000, 1000);
  if (!b) return;
  await f.send('mkfile', mkfileWire(f, mkfilePath(2000, [['key', `fz/inc-${f.rng.hex(8)}`]]), b.ctx), { what: 'mkfile: incomplete block', status: 'fail' });
};

/** mkfile with an odd file size: only the true size in plain digits passes. */
const mkfileSize: Case = async (f) => {
  const r = await readyFile(f);
  if (!r) return;
  const text = intVariants(f.rng, r.content.length);
  const path = r.path.replace(`/mkfile/${r.content.length}`, `/mkfile/${text}`);
  await f.send('mkfile', mkfileWire(f, path, r.ctx), {
    what: `mkfile: size ${JSON.stringify(text)}`,
    status: intRule(text, (n) => n === r.content.length),
    on200: uploadAnswer(f, { key: r.key, content: r.content }),
  });
};

/** mkfile with the path after the size altered, or odd parameters. */
const mkfileParamsCase: Case = async (f) => {
  const r = await readyFile(f);
  if (!r) return;
  const n = r.content.length;
  const hostile: Array<[string, string, Allowed]> = [
    ['trailing name without value', `${r.path}/fname`, 'any'],
    ['unknown parameters', `${r.path}/nope/${b64('x')}/x-y/${b64('z')}`, 'ok'],
    ['key not base64', `/mkfile/${n}/key/not*base64!`, 'fail'],
    ['key of non-UTF-8 bytes', `/mkfile/${n}/key/${b64(Buffer.from([0xff, 0xfe]))}`, 'fail'],
    ['key of 751 bytes', `/mkfile/${n}/key/${b64('k'.repeat(751))}`, 'fail'],
    ['key twice, the kept key second', `${r.path}/key/${b64(f.env.keepKey)}`, 'fail'],
    ['malformed percent-encoding', `${r.path}/x:a/%zz`, 'fail'],
    ['x: variable of non-UTF-8 bytes', `${r.path}/x:a/${b64(Buffer.from([0xc3, 0x28]))}`, 'fail'],
    ['mimeType garbage', `${r.path}/mimeType/${b64('\r\n;;;')}`, 'any'],
    ['500 metadata pairs', `${r.path}${Array.from({ length: 500 }, (_, i) => `/x-qn-meta-m${i}/${b64('v')}`).join('')}`, 'any'],
    ['a 20 KiB path', `${r.path}/x:big/${b64('v'.repeat(15000))}`, 'any'],
    ['empty segments', `/mkfile/${n}//key//${b64(r.key)}`, 'any'],
  ];
  if (f.rng.chance(0.4)) {
    const [label, path, status] = f.rng.pick(hostile);
    await f.send('mkfile', mkfileWire(f, path, r.ctx), { what: `mkfile: ${label}`, status, on200: uploadAnswer(f) });
    return;
  }
  const prefix = `/mkfile/${n}/`;
  const mutated = prefix + mutateText(r.path.slice(prefix.length), f.rng, f.rng.pick(BYTE_MUTATIONS));
  await f.send('mkfile', mkfileWire(f, mutated, r.ctx), { what: `mkfile: path ${mutated.slice(0, 100)}`, status: 'any', on200: uploadAnswer(f) });
};

/** mkfile with a bad Authorization header. */
const mkfileAuth: Case = async (f) => {
  const r = await readyFile(f);
  if (!r) return;
  const v = authVariant(f.rng, f.env.token);
  const w = mkfileWire(f, r.path, r.ctx);
  await f.send('mkfile', { ...w, headers: { ...v.headers, 'content-type': 'text/plain' } }, {
    what: `mkfile: Authorization ${v.what}`,
    status: v.status,
    on200: uploadAnswer(f, { key: r.key, content: r.content }),
  });
};

/** Declared sizes over the limits, refused before the body is read. */
const v1Declared: Case[] = [
  async (f) => {
    await f.send('mkblk', { ...mkblkWire(f, BLOCK, f.rng.bytes(1024)), framing: 'length', declare: BLOCK + 1 }, { what: 'mkblk: Content-Length over the block size', status: 'fail' });
  },
  async (f) => {
    await f.send('mkblk', { ...mkblkWire(f, BLOCK, f.rng.bytes(1024)), framing: 'length', declare: 2 * f.env.maxObjectBytes }, { what: 'mkblk: Content-Length over the object limit', status: 'fail' });
  },
  async (f) => {
    const w: Wire = { method: 'POST', path: mkfilePath(10, []), headers: { ...auth(f.env.token), 'content-type': 'text/plain' }, body: Buffer.from('a,b'), declare: 64 * MiB };
    await f.send('mkfile', w, { what: 'mkfile: Content-Length 64 MiB', status: [413] });
  },
  async (f) => {
    // Chunked, so nothing declares the size: the server reads up to the limit, answers, and the client stops sending.
    const body = Buffer.alloc(4 * MiB + 1, 0x61);
    const w: Wire = { method: 'POST', path: mkfilePath(10, []), headers: { ...auth(f.env.token), ...octet }, body, framing: 'chunked', pieces: 64 };
    await f.send('mkfile', w, { what: 'mkfile: a ctx list over 4 MiB', status: [413] });
  },
  async (f) => {
    const body = f.rng.bytes(BLOCK + 1);
    await f.send('mkblk', { ...mkblkWire(f, BLOCK, body), framing: 'chunked', pieces: 32 }, { what: 'mkblk: a chunk over 4 MiB', status: 'fail' });
  },
];

/** v1 requests cut off by the client. */
const v1Disconnects: Case[] = [
  ...times(12, async (f) => {
    const body = f.rng.bytes(f.rng.pick([100000, MiB]));
    await f.send('mkblk', { ...mkblkWire(f, body.length, body), cutAt: 1 + f.rng.int(body.length - 1) }, { what: 'mkblk: client gone', status: 'fail' });
  }),
  ...times(8, async (f) => {
    const b = await startBlock(f, 2 * MiB, 1000);
    if (!b) return;
    const rest = b.block.subarray(1000);
    await f.send('bput', { ...bputWire(f, b.ctx, 1000, rest), cutAt: 1 + f.rng.int(rest.length - 1) }, { what: 'bput: client gone', status: 'fail' });
  }),
  ...times(6, async (f) => {
    const r = await readyFile(f);
    if (!r) return;
    const list = Buffer.from(Array.from({ length: 2000 }, () => r.ctx).join(','));
    await f.send('mkfile', { ...mkfileWire(f, r.path, list), cutAt: 1 + f.rng.int(list.length - 1) }, { what: 'mkfile: client gone', status: 'fail' });
  }),
];

/** Every v1 case of the main phase. */
export function v1Cases(): Case[] {
  return [
    ...times(40, v1Base),
    v1TwoBlocks,
    ...times(120, mkblkBody),
    ...times(50, mkblkSize),
    ...times(40, mkblkAuth),
    ...times(14, mkblkType),
    ...times(50, bputCtx),
    ...times(40, bputOffset),
    ...times(40, bputBody),
    ...times(10, bputReplay),
    ...times(70, mkfileList),
    ...mkfileHostile,
    ...times(4, mkfileIncomplete),
    ...times(30, mkfileSize),
    ...times(40, mkfileParamsCase),
    ...times(20, mkfileAuth),
    ...v1Declared,
  ];
}

export function v1DisconnectCases(): Case[] {
  return v1Disconnects;
}

