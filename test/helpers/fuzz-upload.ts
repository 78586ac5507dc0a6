/**
 * The shared vocabulary of the upload fuzz cases (fuzz-form.ts, fuzz-v1.ts, fuzz-v2.ts): what a case sees of the
 * server (UploadFuzzEnv) and can do (Fuzzer), the key modes of a valid upload (a new key, none, the kept key with its
 * own or other bytes, a key-scoped token), the check of a 200 upload answer, Authorization variants, odd integers for
 * path segments, and body alterations. Every random choice comes from the case's own seeded Rng.
 */
import { createHash } from 'node:crypto';
import { qetag } from './etag.js';
import { BYTE_MUTATIONS, mutateBytes, mutateText, type Allowed, type Expect, type Rng, type Wire } from './fuzz.js';

export const MiB = 1024 * 1024;

/** The server under test as the cases see it. */
export interface UploadFuzzEnv {
  bucket: string;
  /** The key of the object no input may change, and its bytes. */
  keepKey: string;
  keepBytes: Buffer;
  /** `insertOnly: 1` over the whole bucket: may create any key, never replace one. */
  token: string;
  /** Scope `<bucket>:<key>`: may write only that key. */
  scopedToken(key: string): string;
  /** A valid token whose scope is a bucket that does not exist. */
  otherBucketToken: string;
  /** GRANARY_MAX_OBJECT_SIZE of the server. */
  maxObjectBytes: number;
}

/** What a case can do. */
export interface Fuzzer {
  readonly env: UploadFuzzEnv;
  /** This case's own random stream. */
  readonly rng: Rng;
  /** Sends, judges and counts one request under `route`; resolves with the JSON of a 200 answer, else undefined. */
  send(route: string, w: Wire, e: Expect): Promise<Record<string, unknown> | undefined>;
  /** Records an object a 200 answer created, for the final download check (`content` when known). */
  created(key: string, hash: string, content?: Buffer): void;
}

export type Case = (f: Fuzzer) => Promise<void>;

/** `n` copies of a case. */
export const times = (n: number, c: Case): Case[] => Array.from({ length: n }, () => c);

export const b64 = (data: string | Buffer): string => Buffer.from(data).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
export const md5Hex = (data: Buffer): string => createHash('md5').update(data).digest('hex');
export const sha1b64 = (data: Buffer): string => b64(createHash('sha1').update(data).digest());

/** Short values for variables, metadata and names: ASCII, CJK, emoji, quotes, empty. */
const WORDS = ['a', 'hello world', '中文值', 'emoji 😀', 'quote " and \\', '', 'x'.repeat(300), '$(key)', '<b>&amp;</b>'];
export const word = (rng: Rng): string => rng.pick(WORDS);

/** `{hash, key}` of a 200 upload answer, checked; the object is recorded for the final download check. */
export function uploadAnswer(f: Fuzzer, want: { key?: string; content?: Buffer; hash?: string } = {}): (json: unknown) => string | undefined {
  return (json) => {
    const j = json as { hash?: unknown; key?: unknown } | null;
    if (typeof j?.hash !== 'string' || typeof j.key !== 'string') return 'a 200 upload answer without string hash and key';
    if (j.key === f.env.keepKey && j.hash !== qetag(f.env.keepBytes)) return 'the kept object was answered with another hash';
    const hash = want.hash ?? (want.content ? qetag(want.content) : undefined);
    if (hash !== undefined && j.hash !== hash) return `hash ${j.hash} is not ${hash}`;
    if (want.key !== undefined && j.key !== want.key) return `key ${j.key} is not ${want.key}`;
    f.created(j.key, j.hash, want.content);
    return undefined;
  };
}

export const BLOCK = 4 * MiB;
/** Characters of a ctx or an uploadId, plus a few that are not. */
export const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=!~*$';

export const auth = (token: string): Record<string, string> => ({ authorization: `UpToken ${token}` });
export const octet = { 'content-type': 'application/octet-stream' };

/** The text `text` percent-decoded as the router does, or undefined when it is malformed. */
function routed(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** 'ok' when a path integer is plain digits (after the router's percent-decoding) that `ok` accepts, else 'fail'. */
export function intRule(text: string, ok: (n: number) => boolean): Allowed {
  const t = routed(text);
  return t !== undefined && /^\d+$/.test(t) && ok(Number(t)) ? 'ok' : 'fail';
}

/** Integers the fuzzer puts where a path expects one. */
export function intVariants(rng: Rng, good: number): string {
  const fixed = ['0', '-1', '10001', 'abc', '', '1e3', '0x10', '1.5', '%201', 'NaN', '99999999999999999999', '%31', '%zz', `0${good}`, `${good}.0`, `+${good}`, '%EF%BC%91'];
  return rng.chance(0.5) ? rng.pick(fixed) : rng.chance(0.5) ? String(good + rng.pick([-1, 1, BLOCK])) : mutateText(String(good), rng, rng.pick(BYTE_MUTATIONS));
}

/** A body cut at a random byte or changed by one byte mutation. */
export function alterBody(rng: Rng, body: Buffer): { sent: Buffer; how: string } {
  if (rng.chance(0.4)) {
    const cut = rng.int(body.length + 1);
    return { sent: body.subarray(0, cut), how: `cut at ${cut} of ${body.length}` };
  }
  const kind = rng.pick(BYTE_MUTATIONS);
  return { sent: mutateBytes(body, rng, kind), how: kind };
}

export const framing = (rng: Rng): Pick<Wire, 'framing' | 'pieces'> => ({ framing: rng.chance(0.3) ? 'chunked' : 'length', pieces: rng.pick([1, 1, 2]) });

export type KeyMode = 'new' | 'none' | 'kSame' | 'kDiff' | 'scoped';

/** Content, key, token and expected status of a valid upload in one of the key modes. */
export function target(f: Fuzzer, label: string, sizes: number[]): { content: Buffer; key: string | undefined; token: string; status: Allowed; mode: KeyMode } {
  const { rng, env } = f;
  const mode = rng.pick<KeyMode>(['new', 'new', 'new', 'none', 'kSame', 'kDiff', 'scoped']);
  const content = mode === 'kSame' ? env.keepBytes : mode === 'kDiff' ? rng.bytes(env.keepBytes.length) : rng.bytes(rng.pick(sizes));
  const key = mode === 'kSame' || mode === 'kDiff' ? env.keepKey : mode === 'none' ? undefined : `fz/${label}-${rng.hex(10)}`;
  return { content, key, token: mode === 'scoped' ? env.scopedToken(key as string) : env.token, status: mode === 'kDiff' ? [614] : 'ok', mode };
}

/** Authorization headers: case and spacing variants pass, anything else is 401. */
export function authVariant(rng: Rng, token: string): { headers: Record<string, string>; status: Allowed; what: string } {
  const variants: Array<[string | undefined, Allowed]> = [
    [undefined, 'fail'],
    ['', 'fail'],
    ['UpToken', 'fail'],
    [`uptoken ${token}`, 'ok'],
    [`UPTOKEN   ${token}`, 'ok'],
    [`Bearer ${token}`, 'fail'],
    [`UpToken ${token} extra`, 'fail'],
    [`QBox ${token}`, 'fail'],
    [`UpToken ${token}:`, 'fail'],
    [`UpToken :${token}`, 'fail'],
    [`UpToken ${'x'.repeat(8000)}`, 'fail'],
  ];
  if (rng.chance(0.5)) {
    const [value, status] = rng.pick(variants);
    return { headers: value === undefined ? {} : { authorization: value }, status, what: JSON.stringify(value?.slice(0, 60)) };
  }
  const mutated = mutateText(token, rng, rng.pick(BYTE_MUTATIONS), 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:= ');
  return { headers: { authorization: `UpToken ${mutated}` }, status: mutated.trim() === token ? 'ok' : 'fail', what: 'altered token' };
}
