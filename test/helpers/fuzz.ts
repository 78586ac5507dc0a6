/**
 * Machinery for fuzzing a server over raw HTTP/1.1: a seeded PRNG (mulberry32) with per-case derived streams (so a
 * case's inputs never depend on how the others were scheduled), byte and text mutators that always change their
 * input, a multipart builder that knows which bytes are delimiters, part headers and values, a sender that can
 * frame a body by Content-Length or chunked, write it in pieces, declare more than it sends, or vanish half-way,
 * and an oracle + tally that judge every answer and count outcomes per route and status.
 */
import * as http from 'node:http';

// ---- PRNG -------------------------------------------------------------------------------------------------------

/** FNV-1a of a string: turns a seed and a label into a 32-bit seed. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A deterministic pseudo-random stream (mulberry32). */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A generator for `label` under `seed`, independent of every other label. */
  static derive(seed: number, label: string): Rng {
    return new Rng(fnv1a(`${seed}:${label}`));
  }

  /** The next float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** `n` random bytes. */
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }

  /** `n` random lower-case hex digits. */
  hex(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[this.int(16)];
    return s;
  }
}

// ---- mutators ---------------------------------------------------------------------------------------------------

export type ByteMutation = 'flip' | 'insert' | 'delete';
export const BYTE_MUTATIONS: readonly ByteMutation[] = ['flip', 'insert', 'delete'];

/**
 * `buf` changed by one mutation (never a no-op): `flip` replaces a byte by another, `insert` adds 1–8 bytes,
 * `delete` removes 1–8 bytes (an empty input gets an insert). With `alphabet`, new bytes are drawn from it.
 */
export function mutateBytes(buf: Buffer, rng: Rng, kind: ByteMutation, alphabet?: string): Buffer {
  const fresh = (): number => (alphabet ? alphabet.charCodeAt(rng.int(alphabet.length)) : rng.int(256));
  if (buf.length === 0 || kind === 'insert') {
    const at = rng.int(buf.length + 1);
    const n = 1 + rng.int(8);
    const ins = Buffer.alloc(n);
    for (let i = 0; i < n; i++) ins[i] = fresh();
    return Buffer.concat([buf.subarray(0, at), ins, buf.subarray(at)]);
  }
  const at = rng.int(buf.length);
  if (kind === 'delete') {
    const n = 1 + rng.int(Math.min(8, buf.length - at));
    return Buffer.concat([buf.subarray(0, at), buf.subarray(at + n)]);
  }
  const out = Buffer.from(buf);
  const old = out[at] as number;
  let b = alphabet ? fresh() : old ^ (1 + rng.int(255));
  if (b === old) b = alphabet ? (alphabet.charCodeAt(0) === old ? alphabet.charCodeAt(1) : alphabet.charCodeAt(0)) : old ^ 1;
  out[at] = b;
  return out;
}

/** Characters that may appear in a request-target unescaped (plus `%`, which may make it malformed). */
export const PATH_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=.~!$&()*+,;:@%';

/** `text` (ASCII) changed by one mutation with characters from `alphabet`. */
export function mutateText(text: string, rng: Rng, kind: ByteMutation, alphabet = PATH_ALPHABET): string {
  return mutateBytes(Buffer.from(text, 'latin1'), rng, kind, alphabet).toString('latin1');
}

// ---- multipart --------------------------------------------------------------------------------------------------

/** One part of a hand-built multipart body; a file part when `filename` is given. */
export interface FormPart {
  name: string;
  value: Buffer | string;
  filename?: string | Buffer;
  contentType?: string;
}

/** A run of bytes of a multipart body and what it is. `part` indexes the parts (-1 for the close delimiter). */
export interface Segment {
  kind: 'delimiter' | 'header' | 'value' | 'close';
  part: number;
  bytes: Buffer;
}

/** The segments of `multipart/form-data` with `boundary` (fields exactly in the given order). */
export function formSegments(parts: FormPart[], boundary: string): Segment[] {
  const segs: Segment[] = [];
  parts.forEach((p, i) => {
    segs.push({ kind: 'delimiter', part: i, bytes: Buffer.from(`${i === 0 ? '' : '\r\n'}--${boundary}\r\n`) });
    const head: Buffer[] = [Buffer.from(`Content-Disposition: form-data; name="${p.name}"`)];
    if (p.filename !== undefined) head.push(Buffer.from('; filename="'), Buffer.from(p.filename), Buffer.from('"'));
    head.push(Buffer.from('\r\n'));
    if (p.contentType !== undefined) head.push(Buffer.from(`Content-Type: ${p.contentType}\r\n`));
    head.push(Buffer.from('\r\n'));
    segs.push({ kind: 'header', part: i, bytes: Buffer.concat(head) });
    segs.push({ kind: 'value', part: i, bytes: Buffer.from(p.value) });
  });
  segs.push({ kind: 'close', part: -1, bytes: Buffer.from(`\r\n--${boundary}--\r\n`) });
  return segs;
}

/** The body bytes of `segments`. */
export function joinSegments(segments: Segment[]): Buffer {
  return Buffer.concat(segments.map((s) => s.bytes));
}

/** A segment chosen with probability proportional to its length (so every byte is equally likely). */
export function pickSegment(segments: Segment[], rng: Rng): number {
  const total = segments.reduce((n, s) => n + Math.max(1, s.bytes.length), 0);
  let at = rng.int(total);
  for (let i = 0; i < segments.length; i++) {
    at -= Math.max(1, (segments[i] as Segment).bytes.length);
    if (at < 0) return i;
  }
  return segments.length - 1;
}

// ---- sending ----------------------------------------------------------------------------------------------------

/** One raw request. */
export interface Wire {
  method: string;
  /** Request-target sent as is. */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Body framing: Content-Length (default) or chunked transfer encoding. */
  framing?: 'length' | 'chunked';
  /** Writes the body in this many pieces, each awaited (default 1). */
  pieces?: number;
  /** Declares this Content-Length but sends only `body`, then waits for an early answer. */
  declare?: number;
  /** Sends only the first `cutAt` (≥ 1) bytes of the body, then destroys the socket. */
  cutAt?: number;
}

/** What came back: an answer, a planned disconnect (with the answer if one still arrived), a timeout, an error. */
export type Outcome =
  | { kind: 'answer'; status: number; contentType: string | undefined; body: Buffer; text: string }
  | { kind: 'cut'; answer?: Extract<Outcome, { kind: 'answer' }> }
  | { kind: 'timeout' }
  | { kind: 'error'; message: string };

/** Where requests go: 127.0.0.1:`port` through `agent` (keep-alive). */
export interface Target {
  port: number;
  /** Keep-alive agent of the requests; `false`: a new connection for the request. */
  agent: http.Agent | false;
}

/** `body` in `n` pieces of (nearly) equal size. */
function piecesOf(body: Buffer, n: number): Buffer[] {
  if (n <= 1 || body.length < n) return [body];
  const out: Buffer[] = [];
  const step = Math.ceil(body.length / n);
  for (let off = 0; off < body.length; off += step) out.push(body.subarray(off, off + step));
  return out;
}

/**
 * Sends `w` and resolves with its outcome; never rejects. An answer that arrives before the body is sent whole
 * stops the writing (the socket is dropped once the answer is read). A request not answered within `timeoutMs`
 * is destroyed and reported as a timeout. A request that finds its reused keep-alive socket already closed by the
 * server (EPIPE/ECONNRESET before any answer: the server ended that connection after an earlier request, and the
 * agent picked it before seeing the FIN — nothing reached the server) is sent again once on a new connection, as
 * Node's documentation advises for keep-alive clients.
 */
export function send(target: Target, w: Wire, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const body = w.body ?? Buffer.alloc(0);
    const headers: Record<string, string | number> = { ...w.headers };
    if (w.framing === 'chunked') headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = w.declare ?? body.length;
    let req: http.ClientRequest;
    try {
      req = http.request({ host: '127.0.0.1', port: target.port, method: w.method, path: w.path, headers, agent: target.agent });
    } catch (err) {
      resolve({ kind: 'error', message: `the request could not be built: ${(err as Error).message}` });
      return;
    }
    let settled = false;
    let answer: Extract<Outcome, { kind: 'answer' }> | undefined;
    let responded = false;
    const timer = setTimeout(() => {
      settle({ kind: 'timeout' });
      req.destroy();
    }, timeoutMs);
    const settle = (o: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    req.on('response', (res) => {
      responded = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => undefined);
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        answer = { kind: 'answer', status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: bytes, text: bytes.toString('utf8') };
        if (w.cutAt === undefined) settle(answer);
        if (!req.writableFinished) req.destroy(); // an early answer: the rest of the body is not sent
      });
    });
    req.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      if (req.reusedSocket && !responded && !settled && (code === 'EPIPE' || code === 'ECONNRESET')) {
        settled = true;
        clearTimeout(timer);
        resolve(send({ ...target, agent: false }, w, timeoutMs));
        return;
      }
      if (w.cutAt === undefined && !responded) settle({ kind: 'error', message: `${err.message}${req.reusedSocket ? ' (on a reused keep-alive socket)' : ''}` });
    });
    req.on('close', () => {
      if (w.cutAt !== undefined) settle({ kind: 'cut', ...(answer ? { answer } : {}) });
      else settle({ kind: 'error', message: 'the connection closed before the answer ended' });
    });

    const closed = new Promise<void>((r) => req.once('close', () => r()));
    const write = (piece: Buffer): Promise<void> =>
      Promise.race([new Promise<void>((r) => req.write(piece, () => r())), closed]);
    void (async () => {
      const sendable = w.cutAt !== undefined ? body.subarray(0, w.cutAt) : body;
      for (const piece of piecesOf(sendable, w.pieces ?? 1)) {
        if (responded || settled || req.destroyed) return;
        if (piece.length > 0) await write(piece);
      }
      if (req.destroyed || responded) return;
      if (w.cutAt !== undefined) {
        req.destroy(); // the bytes written so far are on their way; then the client vanishes
      } else if (w.declare === undefined) {
        req.end();
      } else {
        req.flushHeaders();
      }
    })();
  });
}

// ---- oracle -----------------------------------------------------------------------------------------------------

/** What an input may legitimately get: exactly 200 (`ok`), anything but 200 (`fail`), either, or listed statuses. */
export type Allowed = 'ok' | 'fail' | 'any' | number[];

/** The expectation for one request. */
export interface Expect {
  /** Short description of the input (for reports). */
  what: string;
  status: Allowed;
  /** Extra checks of a 200 answer's JSON: a problem description, or undefined. */
  on200?: (json: unknown) => string | undefined;
  /** A 200 answer may have an empty body (abort). */
  emptyOk?: boolean;
  /** A 200 answer may carry another Content-Type (the form field `accept`). */
  anyType200?: boolean;
}

/** The statuses Kodo upload routes answer with (and the router's 404 / 405 / 414 for unroutable paths). */
export const KODO_STATUSES = new Set([200, 400, 401, 403, 404, 405, 406, 413, 414, 612, 614, 631, 701]);

/** The problems with one answer (empty when it passes). */
export function judgeAnswer(a: Extract<Outcome, { kind: 'answer' }>, e: Expect): string[] {
  const problems: string[] = [];
  const head = `${e.what} → ${a.status} ${a.text.slice(0, 200)}`;
  if (a.status >= 500 && a.status < 600) problems.push(`5xx answer: ${head}`);
  else if (!KODO_STATUSES.has(a.status)) problems.push(`non-Kodo status: ${head}`);
  let json: unknown;
  const empty = a.text === '';
  if (!(empty && a.status === 200 && e.emptyOk)) {
    try {
      json = JSON.parse(a.text);
    } catch {
      problems.push(`body is not JSON: ${head}`);
    }
  }
  if (a.status !== 200 || !e.anyType200) {
    if (!/^application\/json/.test(a.contentType ?? '')) problems.push(`Content-Type ${a.contentType}: ${head}`);
  }
  if (a.status !== 200 && json !== undefined) {
    const err = (json as { error?: unknown } | null)?.error;
    if (typeof err !== 'string') problems.push(`error answer without a string "error": ${head}`);
  }
  const s = e.status;
  if (s === 'ok' && a.status !== 200) problems.push(`expected 200: ${head}`);
  if (s === 'fail' && a.status === 200) problems.push(`expected a refusal: ${head}`);
  if (Array.isArray(s) && !s.includes(a.status)) problems.push(`expected ${s.join('/')}: ${head}`);
  if (a.status === 200 && e.on200 && !(empty && e.emptyOk)) {
    const p = e.on200(json);
    if (p) problems.push(`${p}: ${head}`);
  }
  return problems;
}

/** Counts of outcomes per route and status, printed as a table. */
export class Tally {
  private readonly counts = new Map<string, Map<string, number>>();

  add(route: string, status: string): void {
    const row = this.counts.get(route) ?? new Map<string, number>();
    row.set(status, (row.get(status) ?? 0) + 1);
    this.counts.set(route, row);
  }

  /** Inputs sent to `route` (all of them when undefined). */
  total(route?: string): number {
    let n = 0;
    for (const [r, row] of this.counts) if (route === undefined || r === route) for (const c of row.values()) n += c;
    return n;
  }

  /** One line per route: `route  total  status×count …`. */
  summary(): string {
    const lines: string[] = [];
    for (const [route, row] of [...this.counts].sort(([a], [b]) => a.localeCompare(b))) {
      const cells = [...row].sort(([a], [b]) => a.localeCompare(b)).map(([s, c]) => `${s}×${c}`);
      lines.push(`${route.padEnd(12)} ${String(this.total(route)).padStart(5)}  ${cells.join(' ')}`);
    }
    lines.push(`${'total'.padEnd(12)} ${String(this.total()).padStart(5)}`);
    return lines.join('\n');
  }
}

/** Runs `fn` over `items` with at most `width` at a time. */
export async function runPool<T>(items: readonly T[], width: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}
