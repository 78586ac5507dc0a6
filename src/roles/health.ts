/**
 * Health endpoints for load balancers and operators (no credentials; JSON; `Cache-Control: no-store`):
 * - `GET|HEAD /health/live` → 200 `{"status":"live","pid":<n>}` while the process serves requests, with
 *   `"worker":<slot>` when it is one of several worker processes (docs/operations/workers.md).
 * - `GET|HEAD /health/ready` → 200 `{"status":"ready","checks":{…}}` when uploads can be taken, else 503
 *   `{"status":"unready","reasons":["…"],"checks":{…}}`. Checks: `database` (a read answers), `dataDir` (a byte
 *   can be stored durably and removed: on the data dir's disk, or in the object store with GRANARY_BLOBS=s3://),
 *   `freeSpace` (bytes free, total and the GRANARY_MIN_FREE_BYTES reserve), and the background `scrub` state
 *   (informational: corruption found does not make the server unready; stat and the log name the entries).
 *   Each reason says which uploads are refused: all of them (database, free space), or those larger than the
 *   inline limit when blobs cannot be written (smaller ones are kept in the database); downloads may still work.
 * Every check has READY_CHECK_MS to answer, or it fails ("no answer within 3 s"): the answer comes within that
 * whatever hangs (a frozen object store, a stuck disk, an unreachable database). The blob write of a check past
 * its deadline is discarded (its S3 call aborted). Concurrent requests share one run of the checks.
 * `health` is a reserved bucket name, so these paths never shadow a path-style download; on a bound download
 * domain they are downloads of the keys `health/live`, `health/ready`.
 */
import { finished } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../context.js';
import { Errors, storageError } from '../errors.js';
import type { RouteCall } from '../http/route-call.js';
import type { StagedBlob } from '../ports/blob.js';
import { formatBytes } from '../objects/free-space.js';
import { sendJson } from '../http/wire.js';

/** Time each readiness check has to answer, ms. */
export const READY_CHECK_MS = 3000;

interface Check {
  ok: boolean;
  error?: string;
}

/** A failed check's message: the catalogue's storage wording, never a path. */
function failure(err: unknown, what: string): Check {
  return { ok: false, error: storageError(err, what)?.message ?? `${what} failed` };
}

/** A check that did not answer within READY_CHECK_MS, worded by the catalogue entry of its remote store, if any. */
function late(remote: ((detail: string) => Error) | undefined, what: string): Check {
  const detail = `${what} (no answer within ${READY_CHECK_MS / 1000} s)`;
  return { ok: false, error: remote ? remote(detail).message : detail };
}

/** Runs `check` with READY_CHECK_MS to answer; past it `onLate()` is the result and `signal` aborts. */
async function bounded<T>(check: (signal: AbortSignal) => Promise<T>, onLate: () => T): Promise<T> {
  const ctl = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => {
      ctl.abort();
      resolve(onLate());
    }, READY_CHECK_MS);
  });
  try {
    return await Promise.race([check(ctl.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkDatabase(g: Granary): Promise<Check> {
  try {
    await g.meta.ping();
    return { ok: true };
  } catch (err) {
    g.log.warn({ err }, 'health: the database does not answer');
    return failure(err, 'reading the database');
  }
}

/**
 * Stores one byte through the BlobStore the way an upload does (staged, written, sealed: fsynced on a disk, stored
 * on S3), then removes it. Once `signal` aborts (the deadline) the staged byte is discarded, which aborts its call.
 */
async function checkDataDir(g: Granary, signal: AbortSignal): Promise<Check> {
  const what = g.config.blobs.kind === 's3' ? 'writing a probe blob' : 'writing to the data dir';
  let staged: StagedBlob | undefined;
  const discard = (): void => void staged?.discard();
  try {
    staged = await g.blobs.stage();
    signal.addEventListener('abort', discard, { once: true });
    if (signal.aborted) discard();
    staged.sink.end(Buffer.from('.'));
    let id: string;
    try {
      await finished(staged.sink);
      id = await staged.seal();
    } catch (err) {
      await staged.discard();
      throw err;
    }
    await g.blobs.remove(id);
    return { ok: true };
  } catch (err) {
    if (!signal.aborted) g.log.warn({ err }, g.config.blobs.kind === 's3' ? 'health: the object store is not writable' : 'health: the data dir is not writable');
    return failure(err, what);
  } finally {
    signal.removeEventListener('abort', discard);
  }
}

/** Which uploads a failed blob write refuses: those not kept inline in the database (GRANARY_INLINE_MAX). */
function refusedWithoutBlobs(g: Granary): string {
  const inline = g.config.inlineMaxBytes;
  return inline > 0 ? `uploads larger than the inline limit (${formatBytes(inline)}, GRANARY_INLINE_MAX) are refused` : 'uploads are refused';
}

/** The readiness report and its HTTP status; within READY_CHECK_MS (plus a statfs). */
async function runReadiness(g: Granary): Promise<{ status: number; body: Record<string, unknown> }> {
  const s3 = g.config.blobs.kind === 's3';
  const pg = g.config.metadata.kind === 'postgres';
  const lateLogged = (check: string, result: Check): Check => {
    g.log.warn({ check, ms: READY_CHECK_MS }, 'health: a readiness check did not answer in time');
    return result;
  };
  const [database, dataDir, space] = await Promise.all([
    bounded(
      () => checkDatabase(g),
      () => lateLogged('database', late(pg ? Errors.metadataRemote : undefined, 'reading the database')),
    ),
    bounded(
      (signal) => checkDataDir(g, signal),
      () => lateLogged('dataDir', late(s3 ? Errors.storageRemote : undefined, s3 ? 'writing a probe blob' : 'writing to the data dir')),
    ),
    // A statfs that hangs (a stuck network file system) counts as unknown, like one that fails.
    bounded(() => g.space.reading(), () => undefined),
  ]);
  const reasons: string[] = [];
  if (!database.ok) reasons.push(`database: ${database.error ?? 'unreachable'}: uploads are refused`);
  if (!dataDir.ok) reasons.push(`${s3 ? 'object store' : 'data dir'}: ${dataDir.error ?? 'not writable'}: ${refusedWithoutBlobs(g)}`);
  if (space && !space.ok) {
    reasons.push(
      `free space ${formatBytes(space.freeBytes)} is below the reserve ${formatBytes(space.reserveBytes)} (GRANARY_MIN_FREE_BYTES): uploads are refused`,
    );
  }
  const checks = {
    database,
    dataDir,
    freeSpace: space ?? { ok: true, error: 'unknown (statfs failed)' },
    ...(g.scrubber ? { scrub: g.scrubber.status() } : {}),
  };
  return reasons.length === 0
    ? { status: 200, body: { status: 'ready', checks } }
    : { status: 503, body: { status: 'unready', reasons, checks } };
}

/** The run of the checks in progress per server: concurrent requests share it (probes never pile up). */
const inProgress = new WeakMap<Granary, ReturnType<typeof runReadiness>>();

/** The readiness report and its HTTP status (see the module comment). */
export function readiness(g: Granary): ReturnType<typeof runReadiness> {
  let run = inProgress.get(g);
  if (!run) {
    run = runReadiness(g).finally(() => inProgress.delete(g));
    inProgress.set(g, run);
  }
  return run;
}

/** `GET|HEAD /health/live`: this process answers. */
export function live(call: RouteCall<Granary, unknown>, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const g = call.g;
  return sendJson(reply, 200, { status: 'live', pid: process.pid, ...(g.workerSlot !== undefined ? { worker: g.workerSlot } : {}) });
}

/** `GET|HEAD /health/ready`: the readiness report (see the module comment). */
export async function ready(call: RouteCall<Granary, unknown>, _request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { status, body } = await readiness(call.g);
  return sendJson(reply, status, body);
}
