/**
 * The v1 block context `ctx` (docs/development/kodo-protocol.md §5.2–5.3): opaque, URL-safe (it travels in URL paths), tamper-proof.
 * It names a block and the offset of the chunk that must come next; the server keeps each block's current offset,
 * so only the latest ctx of a block is accepted. Form: `<base64url(JSON {b, o, e})>.<base64url(HMAC-SHA256)[16 bytes]>`.
 * Anything forged, altered, expired or not decodable → 701.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { serverSecret } from '../../auth/secrets.js';
import { Errors } from '../../errors.js';
import type { MetaStore } from '../../ports/meta.js';

/** What a ctx carries: block id, next chunk offset (bytes), expiry (Unix seconds). */
export interface CtxPayload {
  blockId: string;
  offset: number;
  expiresAt: number;
}

const SECRET_NAME = 'ctx_key';
const MAC_BYTES = 16;

function mac(secret: Buffer, body: string): Buffer {
  return createHmac('sha256', secret).update(body).digest().subarray(0, MAC_BYTES);
}

/** Signs a ctx. */
export async function encodeCtx(meta: MetaStore, p: CtxPayload): Promise<string> {
  const body = Buffer.from(JSON.stringify({ b: p.blockId, o: p.offset, e: p.expiresAt })).toString('base64url');
  return `${body}.${mac(await serverSecret(meta, SECRET_NAME), body).toString('base64url')}`;
}

/** Verifies and decodes a ctx; 701 when it is not one of ours or has expired at `nowSec`. */
export async function decodeCtx(meta: MetaStore, text: string, nowSec: number): Promise<CtxPayload> {
  const [body, sig, extra] = text.split('.');
  if (!body || !sig || extra !== undefined) throw Errors.invalidCtx();
  const expected = mac(await serverSecret(meta, SECRET_NAME), body);
  const given = Buffer.from(sig, 'base64url');
  // Node's decoder skips characters outside the alphabet and ignores the spare low bits of the last one: only the
  // canonical spelling of the signature is ours, so no altered ctx (`sig!`, `sig=`, a NUL…) passes for the original.
  if (given.length !== expected.length || given.toString('base64url') !== sig || !timingSafeEqual(given, expected)) {
    throw Errors.invalidCtx();
  }
  let json: { b?: unknown; o?: unknown; e?: unknown };
  try {
    json = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof json;
  } catch {
    throw Errors.invalidCtx();
  }
  if (typeof json.b !== 'string' || typeof json.o !== 'number' || typeof json.e !== 'number') throw Errors.invalidCtx();
  if (json.e <= nowSec) throw Errors.invalidCtx();
  return { blockId: json.b, offset: json.o, expiresAt: json.e };
}
