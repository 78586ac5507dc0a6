/**
 * Health endpoints for load balancers and operators (no credentials; JSON; `Cache-Control: no-store`):
 * - `GET|HEAD /health/live` → 200 `{"status":"live","pid":<n>}` while the process serves requests, with
 *   `"worker":<slot>` when it is one of several worker processes (README "Workers").
 * - `GET|HEAD /health/ready` → 200 `{"status":"ready","checks":{…}}` when uploads can be taken, else 503
 *   `{"status":"unready","reasons":["…"],"checks":{…}}`. Checks: `database` (a read answers), `dataDir` (a byte
 *   can be stored durably and removed), `freeSpace` (bytes free, total and the GRANARY_MIN_FREE_BYTES reserve),
 *   and the background `scrub` state (informational: corruption found does not make the server unready; stat and
 *   the log name the entries). A 503 means uploads are refused; downloads may still work.
 * `health` is a reserved bucket name, so these paths never shadow a path-style download; on a bound download
 * domain they are downloads of the keys `health/live`, `health/ready`.
 */
import { finished } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import type { Granary } from '../context.js';
import { storageError } from '../errors.js';
import { formatBytes } from '../store/fs/free-space.js';
import { sendJson } from './http.js';

interface Check {
  ok: boolean;
  error?: string;
}

/** A failed check's message: the catalogue's storage wording, never a path. */
function failure(err: unknown, what: string): Check {
  return { ok: false, error: storageError(err, what)?.message ?? `${what} failed` };
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
 * on S3), then removes it.
 */
async function checkDataDir(g: Granary): Promise<Check> {
  try {
    const staged = await g.blobs.stage();
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
    g.log.warn({ err }, 'health: the data dir is not writable');
    return failure(err, 'writing to the data dir');
  }
}

/** The readiness report and its HTTP status. */
export async function readiness(g: Granary): Promise<{ status: number; body: Record<string, unknown> }> {
  const [database, dataDir, space] = await Promise.all([checkDatabase(g), checkDataDir(g), g.space.reading()]);
  const reasons: string[] = [];
  if (!database.ok) reasons.push(`database: ${database.error ?? 'unreachable'}`);
  if (!dataDir.ok) reasons.push(`data dir: ${dataDir.error ?? 'not writable'}`);
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

/** Registers /health/live and /health/ready. */
export function registerHealth(app: FastifyInstance, g: Granary): void {
  app.route({
    method: ['GET', 'HEAD'],
    url: '/health/live',
    exposeHeadRoute: false,
    handler: (_request, reply) =>
      sendJson(reply, 200, { status: 'live', pid: process.pid, ...(g.workerSlot !== undefined ? { worker: g.workerSlot } : {}) }),
  });
  app.route({
    method: ['GET', 'HEAD'],
    url: '/health/ready',
    exposeHeadRoute: false,
    handler: async (_request, reply) => {
      const { status, body } = await readiness(g);
      return sendJson(reply, status, body);
    },
  });
}
