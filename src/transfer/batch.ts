/**
 * Entry operations on a remote and the Kodo `/batch` call that runs many at once (docs/development/kodo-protocol.md
 * §8.1, §8.4): `stat`, `delete`, `copy`, `move`, `chgm` (MIME type), `chtype` (storage class), each named by the
 * EncodedEntryURI of `bucket:key`.
 *
 * `/batch` takes at most BATCH_MAX (1,000) `op=` lines per call and answers 200 (all succeeded) or 298 (some
 * failed) with one `{code, data}` per op, in order; a failed op's `data` is `{error}`. Any other status (401
 * wrong keys, 631 no such bucket, 400 too many ops) fails the whole call and throws a TransferError.
 */
import { urlsafeB64Encode } from '../auth/base64.js';
import { encodedEntry, type KodoClient } from './client.js';
import { describeStatus, TransferError } from './errors.js';

/** Ops per `/batch` call (Kodo's limit). */
export const BATCH_MAX = 1000;

/** The name of an operation as the CLI prints it. */
export type OpName = 'stat' | 'rm' | 'cp' | 'mv' | 'chgm' | 'chtype';

/** One operation on one entry. `to`: the target of cp/mv; `value`: the MIME type (chgm) or class 0..4 (chtype). */
export interface EntryOp {
  op: OpName;
  bucket: string;
  key: string;
  to?: { bucket: string; key: string };
  value?: string;
  /** cp/mv: replace an existing target. */
  force?: boolean;
}

/** The answer to one op: `code` 200 on success; `data` the entry (stat) ; `error` the server's reason otherwise. */
export interface OpResult {
  code: number;
  data?: Record<string, unknown>;
  error?: string;
}

/** The path of an op (`/stat/<EncodedEntryURI>` …), as sent alone or as an `op=` line of `/batch`. */
export function opPath(o: EntryOp): string {
  const entry = encodedEntry(o.bucket, o.key);
  switch (o.op) {
    case 'stat':
      return `/stat/${entry}`;
    case 'rm':
      return `/delete/${entry}`;
    case 'cp':
    case 'mv':
      if (!o.to) throw new TransferError(`${o.op} needs a target`);
      return `/${o.op === 'cp' ? 'copy' : 'move'}/${entry}/${encodedEntry(o.to.bucket, o.to.key)}/force/${o.force ? 'true' : 'false'}`;
    case 'chgm':
      return `/chgm/${entry}/mime/${urlsafeB64Encode(o.value ?? '')}`;
    case 'chtype':
      return `/chtype/${entry}/type/${o.value ?? ''}`;
  }
}

/** Plain words for the codes of failed ops (§8.7). */
export function codeText(code: number, error?: string): string {
  const known: Record<number, string> = {
    612: 'no such file',
    614: 'the target exists (use --force)',
    631: 'no such bucket',
    400: 'bad request',
    403: 'forbidden',
    599: 'server error',
  };
  return error && error !== '' ? error : (known[code] ?? `status ${code}`);
}

/**
 * Runs up to BATCH_MAX ops in one `/batch` call on the rs host of the first op's bucket; one result per op, in
 * order. Throws a TransferError when the call itself fails.
 */
export async function batchOnce(client: KodoClient, ops: EntryOp[]): Promise<OpResult[]> {
  if (ops.length === 0) return [];
  if (ops.length > BATCH_MAX) throw new TransferError(`at most ${BATCH_MAX} ops per /batch call`);
  const bucket = ops[0]!.bucket;
  const body = ops.map((o) => `op=${encodeURIComponent(opPath(o))}`).join('&');
  const r = await client.request(bucket, 'rs', 'POST', '/batch', { body });
  if (r.status !== 200 && r.status !== 298) throw new TransferError(describeStatus(r.status, r.text, `remote ${client.name}, bucket ${bucket}`), r.status);
  const answers = JSON.parse(r.text) as Array<{ code?: number; data?: Record<string, unknown> }>;
  return ops.map((_, i) => {
    const a = answers[i];
    const code = a?.code ?? 599;
    if (code === 200) return a?.data ? { code, data: a.data } : { code };
    const err = typeof a?.data?.error === 'string' ? a.data.error : undefined;
    return { code, error: codeText(code, err) };
  });
}

/** Runs one op alone (its own call, not `/batch`); failures answer a result, network errors throw. */
export async function runOne(client: KodoClient, o: EntryOp): Promise<OpResult> {
  const r = await client.request(o.bucket, 'rs', o.op === 'stat' ? 'GET' : 'POST', opPath(o));
  if (r.status === 200) return r.text.trim() === '' || o.op !== 'stat' ? { code: 200 } : { code: 200, data: JSON.parse(r.text) as Record<string, unknown> };
  if (r.status === 401) throw new TransferError(describeStatus(r.status, r.text, `remote ${client.name}`), 401);
  let err: string | undefined;
  try {
    const parsed = JSON.parse(r.text) as { error?: unknown };
    if (typeof parsed.error === 'string') err = parsed.error;
  } catch {
    // not JSON
  }
  return { code: r.status, error: codeText(r.status, err) };
}
