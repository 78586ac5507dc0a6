/**
 * The encrypted blob format (encryption at rest, docs/reference/encryption.md): envelope encryption with a per-blob
 * random data key, AES-256-GCM (Node's crypto, OpenSSL) over fixed-size chunks, after MinIO's DARE 2.0 (a
 * per-object random nonce, each package's nonce = that nonce with the package's sequence number in its last 4
 * bytes and a final flag, so packages cannot be reordered, dropped or cut off unnoticed).
 *
 * Layout of an encrypted blob (all integers big-endian):
 *
 * | offset | bytes | field                                                                               |
 * |--------|-------|-------------------------------------------------------------------------------------|
 * | 0      | 8     | magic `GRNYENC` + format version `0x01`                                             |
 * | 8      | 8     | master key id (the first 8 bytes of SHA-256("granary master key id" ‖ key))          |
 * | 16     | 12    | base nonce (random per blob)                                                        |
 * | 28     | 1     | mode: 0 = the master key alone, 1 = also a customer key (SSE-C)                     |
 * | 29     | 3     | zero                                                                                |
 * | 32     | 12    | wrap nonce (random, fresh at every wrap: upload and each master-key rotation)       |
 * | 44     | 12    | customer wrap nonce (mode 1; zero in mode 0)                                        |
 * | 56     | 48    | AES-256-GCM under the master key (AAD: bytes 0–31) of the key payload: mode 0 the   |
 * |        |       | data key ‖ 16 zero bytes; mode 1 the data key AES-256-GCM-encrypted (AAD: bytes     |
 * |        |       | 16–31) under HMAC-SHA256(customer key, "granary sse-c") ‖ its tag                   |
 * | 104    | 16    | its GCM tag                                                                         |
 * | 120    | …     | chunks: ciphertext of ≤ 64 KiB of plaintext followed by its 16-byte GCM tag          |
 *
 * Every chunk but the last holds exactly CHUNK_BYTES of plaintext; the last holds 0…CHUNK_BYTES (empty content is
 * one empty final chunk: the header plus a tag). Chunk `i`'s nonce: the base nonce with its last 4 bytes XORed
 * with `i` and, for the final chunk, its first byte XORed with 0x80. So a plaintext byte range needs only the
 * chunks covering it (`chunkSpan`), and a blob cut after a full chunk fails: that chunk is not final.
 *
 * The header is fixed-size so a master-key rotation rewrites it in place (new key id, wrap nonce, wrapped key)
 * without touching a byte of the data (`granary keys rotate-master`).
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/** Plaintext bytes per chunk (64 KiB, as DARE's packages). */
export const CHUNK_BYTES = 64 * 1024;
/** GCM tag bytes after every chunk. */
export const TAG_BYTES = 16;
/** Stored bytes of a full chunk. */
export const SEALED_CHUNK_BYTES = CHUNK_BYTES + TAG_BYTES;
/** Header bytes before the first chunk. */
export const HEADER_BYTES = 120;
/** Magic + format version 1. */
export const MAGIC = Buffer.from('GRNYENC\x01', 'latin1');

const KEY_ID_AT = 8;
const NONCE_AT = 16;
const MODE_AT = 28;
const WRAP_NONCE_AT = 32;
const CUSTOMER_NONCE_AT = 44;
const WRAPPED_AT = 56;
const WRAPPED_BYTES = 48;
const WRAP_TAG_AT = 104;

/** An SSE-C blob read without its customer key, or with another one (`code` 'ESSECKEY'): never corruption. */
export class CustomerKeyMismatch extends Error {
  readonly code = 'ESSECKEY';
  constructor(detail: string) {
    super(detail);
    this.name = 'CustomerKeyMismatch';
  }
}

/**
 * Stored bytes fail their authentication (a flipped bit, a cut-off or reordered blob, a header that does not
 * open): corruption, never served. `code` 'EINTEGRITY' is what objects/verified-read.ts recognises (599, marked
 * corrupt).
 */
export class CiphertextMismatch extends Error {
  readonly code = 'EINTEGRITY';
  constructor(detail: string) {
    super(detail);
    this.name = 'CiphertextMismatch';
  }
}

/** A master key: 32 bytes and its public id (8 bytes, stored in every header it wraps). */
export interface MasterKey {
  readonly key: Buffer;
  readonly id: Buffer;
  /** Where it was read from, for messages. */
  readonly source: string;
}

/** The id of a master key: the first 8 bytes of SHA-256("granary master key id" ‖ key); reveals nothing of the key. */
export function masterKeyId(key: Buffer): Buffer {
  return createHash('sha256').update('granary master key id').update(key).digest().subarray(0, 8);
}

/** Whether `bytes` starts with the encrypted-blob magic (needs MAGIC.length bytes). */
export function hasMagic(bytes: Buffer): boolean {
  return bytes.length >= MAGIC.length && bytes.subarray(0, MAGIC.length).equals(MAGIC);
}

/** The key wrapping an SSE-C blob's data key: HMAC-SHA256(customer key, "granary sse-c"). */
function customerKek(customerKey: Buffer): Buffer {
  return createHmac('sha256', customerKey).update('granary sse-c').digest();
}

/** A fresh header for a new blob and its data key; `customerKey` (32 bytes, SSE-C) makes it a mode-1 blob. */
export function newHeader(master: MasterKey, customerKey?: Buffer): { header: Buffer; dataKey: Buffer; nonce: Buffer } {
  const dataKey = randomBytes(32);
  const nonce = randomBytes(12);
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  nonce.copy(header, NONCE_AT);
  let payload = Buffer.concat([dataKey, Buffer.alloc(16)]);
  if (customerKey) {
    header[MODE_AT] = 1;
    const cn = randomBytes(12);
    cn.copy(header, CUSTOMER_NONCE_AT);
    const c = createCipheriv('aes-256-gcm', customerKek(customerKey), cn);
    c.setAAD(header.subarray(NONCE_AT, WRAP_NONCE_AT));
    payload = Buffer.concat([c.update(dataKey), c.final(), c.getAuthTag()]);
  }
  wrapInto(header, master, payload);
  return { header, dataKey, nonce };
}

/** Writes the key id, wrap nonce, wrapped payload (48 bytes) and tag of `header` for `master`. */
function wrapInto(header: Buffer, master: MasterKey, payload: Buffer): void {
  master.id.copy(header, KEY_ID_AT);
  const wrapNonce = randomBytes(12);
  wrapNonce.copy(header, WRAP_NONCE_AT);
  const c = createCipheriv('aes-256-gcm', master.key, wrapNonce);
  c.setAAD(header.subarray(0, WRAP_NONCE_AT));
  const wrapped = Buffer.concat([c.update(payload), c.final()]);
  wrapped.copy(header, WRAPPED_AT);
  c.getAuthTag().copy(header, WRAP_TAG_AT);
}

/** The master key id a header names. */
export function headerKeyId(header: Buffer): Buffer {
  return header.subarray(KEY_ID_AT, KEY_ID_AT + 8);
}

/** Whether a header is of an SSE-C blob (mode 1). */
export function needsCustomerKey(header: Buffer): boolean {
  return header[MODE_AT] === 1;
}

/** The key payload under the master key (48 bytes); throws CiphertextMismatch. */
function unwrapPayload(header: Buffer, masters: readonly MasterKey[]): { payload: Buffer; master: MasterKey } {
  if (header.length < HEADER_BYTES || !hasMagic(header)) throw new CiphertextMismatch('the encrypted blob header is cut off or unknown');
  const mode = header[MODE_AT];
  if (mode !== 0 && mode !== 1) throw new CiphertextMismatch(`unknown encryption mode ${mode}`);
  const id = headerKeyId(header);
  const master = masters.find((m) => m.id.equals(id));
  if (!master) throw new CiphertextMismatch(`the blob is encrypted with master key ${id.toString('hex')}, which is not configured`);
  const d = createDecipheriv('aes-256-gcm', master.key, header.subarray(WRAP_NONCE_AT, WRAP_NONCE_AT + 12));
  d.setAAD(header.subarray(0, WRAP_NONCE_AT));
  d.setAuthTag(header.subarray(WRAP_TAG_AT, WRAP_TAG_AT + TAG_BYTES));
  try {
    return { payload: Buffer.concat([d.update(header.subarray(WRAPPED_AT, WRAPPED_AT + WRAPPED_BYTES)), d.final()]), master };
  } catch {
    throw new CiphertextMismatch('the data key of the encrypted blob does not authenticate');
  }
}

/**
 * Opens a header: its data key and base nonce. `masters`: the keys that may have wrapped it (the current one; the
 * old one during a rotation); `customerKey`: the SSE-C key of a mode-1 blob. Throws CiphertextMismatch when no
 * key of `masters` has its id or the wrap does not authenticate, CustomerKeyMismatch when a mode-1 blob is opened
 * without its customer key or with another.
 */
export function openHeader(header: Buffer, masters: readonly MasterKey[], customerKey?: Buffer): { dataKey: Buffer; nonce: Buffer; master: MasterKey } {
  const { payload, master } = unwrapPayload(header, masters);
  const nonce = Buffer.from(header.subarray(NONCE_AT, NONCE_AT + 12));
  if (!needsCustomerKey(header)) return { dataKey: payload.subarray(0, 32), nonce, master };
  if (!customerKey) throw new CustomerKeyMismatch('the object is encrypted with a customer-provided key (SSE-C), which this request does not give');
  const d = createDecipheriv('aes-256-gcm', customerKek(customerKey), header.subarray(CUSTOMER_NONCE_AT, CUSTOMER_NONCE_AT + 12));
  d.setAAD(header.subarray(NONCE_AT, WRAP_NONCE_AT));
  d.setAuthTag(payload.subarray(32, 48));
  try {
    return { dataKey: Buffer.concat([d.update(payload.subarray(0, 32)), d.final()]), nonce, master };
  } catch {
    throw new CustomerKeyMismatch('the customer-provided key (SSE-C) is not the one the object was stored with');
  }
}

/**
 * The header re-wrapped for `to`: the same key payload (data key, or its SSE-C wrap: no customer key needed) and
 * base nonce; the data is untouched. `from`: keys that may open it now. Throws CiphertextMismatch as openHeader.
 */
export function rewrapHeader(header: Buffer, from: readonly MasterKey[], to: MasterKey): Buffer {
  const { payload } = unwrapPayload(header, from);
  const out = Buffer.from(header.subarray(0, HEADER_BYTES));
  wrapInto(out, to, payload);
  return out;
}

/**
 * Nonce of chunk `index` (final flag in the first byte's top bit), written into `into` (12 bytes; a fresh buffer
 * when not given). createCipheriv copies the IV, so one scratch buffer serves every chunk of a stream.
 */
function chunkNonce(base: Buffer, index: number, final: boolean, into: Buffer = Buffer.allocUnsafe(12)): Buffer {
  base.copy(into, 0, 0, 12);
  into.writeUInt32BE((base.readUInt32BE(8) ^ index) >>> 0, 8);
  if (final) into[0]! ^= 0x80;
  return into;
}

/** Seals one chunk into `out`: its ciphertext, then its tag (two buffers, not copied into one). */
function sealChunkInto(out: Buffer[], dataKey: Buffer, base: Buffer, index: number, final: boolean, plain: Buffer, nonce?: Buffer): void {
  const c = createCipheriv('aes-256-gcm', dataKey, chunkNonce(base, index, final, nonce));
  out.push(c.update(plain));
  c.final();
  out.push(c.getAuthTag());
}

/** Seals one chunk: ciphertext then tag. */
function sealChunk(dataKey: Buffer, base: Buffer, index: number, final: boolean, plain: Buffer): Buffer[] {
  const out: Buffer[] = [];
  sealChunkInto(out, dataKey, base, index, final, plain);
  return out;
}

/** Opens one sealed chunk (ciphertext ‖ tag); undefined when it does not authenticate as (`index`, `final`). */
function openChunk(dataKey: Buffer, base: Buffer, index: number, final: boolean, sealed: Buffer): Buffer | undefined {
  if (sealed.length < TAG_BYTES) return undefined;
  const d = createDecipheriv('aes-256-gcm', dataKey, chunkNonce(base, index, final));
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  const pt = d.update(sealed.subarray(0, sealed.length - TAG_BYTES));
  try {
    d.final();
    return pt;
  } catch {
    return undefined;
  }
}

/** Stored size of `plainBytes` bytes of content. */
export function sealedSize(plainBytes: number): number {
  const chunks = Math.max(1, Math.ceil(plainBytes / CHUNK_BYTES));
  return HEADER_BYTES + plainBytes + chunks * TAG_BYTES;
}

/** Plaintext bytes of a blob of `storedBytes` stored bytes (the inverse of sealedSize); -1 when no blob has that size. */
export function plainSize(storedBytes: number): number {
  const body = storedBytes - HEADER_BYTES;
  if (body < TAG_BYTES) return -1;
  const chunks = Math.ceil(body / SEALED_CHUNK_BYTES);
  return body - chunks * TAG_BYTES;
}

/** Encrypts a whole small buffer (inline blobs). */
export function sealBuffer(master: MasterKey, plain: Buffer, customerKey?: Buffer): Buffer {
  const { header, dataKey, nonce } = newHeader(master, customerKey);
  const parts: Buffer[] = [header];
  const chunks = Math.max(1, Math.ceil(plain.length / CHUNK_BYTES));
  for (let i = 0; i < chunks; i++) {
    parts.push(...sealChunk(dataKey, nonce, i, i === chunks - 1, plain.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES)));
  }
  return Buffer.concat(parts);
}

/** Decrypts a whole buffer written by sealBuffer or EncryptStream; throws CiphertextMismatch. */
export function openBuffer(masters: readonly MasterKey[], stored: Buffer, customerKey?: Buffer): Buffer {
  const { dataKey, nonce } = openHeader(stored, masters, customerKey);
  const out: Buffer[] = [];
  let at = HEADER_BYTES;
  for (let i = 0; ; i++) {
    const rest = stored.length - at;
    const final = rest <= SEALED_CHUNK_BYTES;
    const pt = openChunk(dataKey, nonce, i, final, stored.subarray(at, at + Math.min(rest, SEALED_CHUNK_BYTES)));
    if (!pt) throw new CiphertextMismatch(`chunk ${i} of the encrypted blob does not authenticate`);
    out.push(pt);
    if (final) return Buffer.concat(out);
    at += SEALED_CHUNK_BYTES;
  }
}

/**
 * Bytes of ciphertext an EncryptStream may hold before its writer waits: two write batches of objects/spill-stage.ts
 * (256 KiB each), so the next batch is encrypted on the main thread while the file write of the previous one is in
 * the thread pool, instead of one after the other (memory per upload: this much more).
 */
const ENCRYPT_BUFFER_BYTES = 512 * 1024;

/**
 * Encrypts a stream: plaintext in, header then sealed chunks out. A chunk's ciphertext and tag go out as they are
 * (no copy into one buffer: the file stream writes what is queued with one writev).
 */
export class EncryptStream extends Transform {
  private readonly acc = Buffer.allocUnsafe(CHUNK_BYTES);
  private fill = 0;
  private index = 0;
  private readonly dataKey: Buffer;
  private readonly nonce: Buffer;
  /** Scratch IV of the chunk being sealed. */
  private readonly chunkIv = Buffer.allocUnsafe(12);

  constructor(master: MasterKey, customerKey?: Buffer) {
    super({ readableHighWaterMark: ENCRYPT_BUFFER_BYTES, writableHighWaterMark: ENCRYPT_BUFFER_BYTES });
    const { header, dataKey, nonce } = newHeader(master, customerKey);
    this.dataKey = dataKey;
    this.nonce = nonce;
    this.push(header);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const out: Buffer[] = [];
    this.absorb(chunk, out);
    for (const b of out) this.push(b);
    cb();
  }

  /** A batch of writes (objects/spill-stage.ts writes 256 KiB at a time) is sealed in one call. */
  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    const out: Buffer[] = [];
    for (const { chunk } of chunks) this.absorb(chunk, out);
    for (const b of out) this.push(b);
    cb();
  }

  override _flush(cb: TransformCallback): void {
    const out: Buffer[] = [];
    this.seal(true, this.acc.subarray(0, this.fill), out);
    for (const b of out) this.push(b);
    cb();
  }

  /** Seals the complete chunks `chunk` adds into `out` (sealed parts, in order); the rest waits in `acc`. */
  private absorb(chunk: Buffer, out: Buffer[]): void {
    let at = 0;
    while (at < chunk.length) {
      // A full chunk goes out only once more bytes follow: the last one is sealed as final in _flush.
      if (this.fill === CHUNK_BYTES) {
        this.seal(false, this.acc, out);
        this.fill = 0;
      }
      // Whole chunks straight from the input (more bytes after them), without a copy into `acc`.
      if (this.fill === 0 && chunk.length - at > CHUNK_BYTES) {
        this.seal(false, chunk.subarray(at, at + CHUNK_BYTES), out);
        at += CHUNK_BYTES;
        continue;
      }
      const n = Math.min(CHUNK_BYTES - this.fill, chunk.length - at);
      chunk.copy(this.acc, this.fill, at, at + n);
      this.fill += n;
      at += n;
    }
  }

  private seal(final: boolean, plain: Buffer, out: Buffer[]): void {
    sealChunkInto(out, this.dataKey, this.nonce, this.index++, final, plain, this.chunkIv);
  }
}

/** The stored byte span holding plaintext bytes `start`…`end` (inclusive), and the chunks it covers. */
export function chunkSpan(start: number, end: number): { firstChunk: number; storedStart: number; storedEnd: number } {
  const firstChunk = Math.floor(start / CHUNK_BYTES);
  const lastChunk = Math.floor(end / CHUNK_BYTES);
  return {
    firstChunk,
    storedStart: HEADER_BYTES + firstChunk * SEALED_CHUNK_BYTES,
    storedEnd: HEADER_BYTES + (lastChunk + 1) * SEALED_CHUNK_BYTES - 1,
  };
}

/**
 * Decrypts sealed chunks (from chunk `firstChunk` on) to plaintext, synchronously, skipping `skip` leading plaintext
 * bytes and giving at most `limit`. `toEnd`: the input runs to the blob's end, so its last chunk must be the final
 * one (truncation check); otherwise (a range) the last chunk read may or may not be final. `update` and `final`
 * throw CiphertextMismatch.
 */
export class ChunkOpener {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private index: number;
  private skip: number;
  private limit: number;
  private readonly toEnd: boolean;

  constructor(
    private readonly dataKey: Buffer,
    private readonly nonce: Buffer,
    opts: { firstChunk: number; skip: number; limit: number; toEnd: boolean },
  ) {
    this.index = opts.firstChunk;
    this.skip = opts.skip;
    this.limit = opts.limit;
    this.toEnd = opts.toEnd;
  }

  /** Plaintext of the chunks completed by `chunk` (a full chunk with bytes after it is not the last: non-final). */
  update(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const out: Buffer[] = [];
    while (this.pendingBytes > SEALED_CHUNK_BYTES) {
      const pt = openChunk(this.dataKey, this.nonce, this.index, false, this.take(SEALED_CHUNK_BYTES));
      if (!pt) throw new CiphertextMismatch(`chunk ${this.index} of the encrypted blob does not authenticate`);
      this.index++;
      this.out(pt, out);
    }
    return out;
  }

  /** Plaintext of the last chunk. */
  final(): Buffer[] {
    const out: Buffer[] = [];
    if (this.pendingBytes === 0) {
      if (this.toEnd) throw new CiphertextMismatch('the encrypted blob is cut off');
      return out;
    }
    const sealed = this.take(this.pendingBytes);
    // To the end: the last chunk must be final. In a range a full last chunk may be either (non-final tried first).
    let pt = !this.toEnd && sealed.length === SEALED_CHUNK_BYTES ? openChunk(this.dataKey, this.nonce, this.index, false, sealed) : undefined;
    pt ??= openChunk(this.dataKey, this.nonce, this.index, true, sealed);
    if (!pt) throw new CiphertextMismatch(`chunk ${this.index} of the encrypted blob does not authenticate (or the blob is cut off)`);
    this.out(pt, out);
    return out;
  }

  private take(n: number): Buffer {
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    const head = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    return head;
  }

  private out(pt: Buffer, into: Buffer[]): void {
    let part = pt;
    if (this.skip > 0) {
      const s = Math.min(this.skip, part.length);
      part = part.subarray(s);
      this.skip -= s;
    }
    if (part.length > this.limit) part = part.subarray(0, this.limit);
    this.limit -= part.length;
    if (part.length > 0) into.push(part);
  }
}

/** ChunkOpener as a stream: sealed chunks in, plaintext out; fails with CiphertextMismatch. */
export class DecryptStream extends Transform {
  private readonly opener: ChunkOpener;

  constructor(dataKey: Buffer, nonce: Buffer, opts: { firstChunk: number; skip: number; limit: number; toEnd: boolean }) {
    super();
    this.opener = new ChunkOpener(dataKey, nonce, opts);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    try {
      for (const pt of this.opener.update(chunk)) this.push(pt);
    } catch (err) {
      return cb(err as Error);
    }
    cb();
  }

  override _flush(cb: TransformCallback): void {
    try {
      for (const pt of this.opener.final()) this.push(pt);
    } catch (err) {
      return cb(err as Error);
    }
    cb();
  }
}
