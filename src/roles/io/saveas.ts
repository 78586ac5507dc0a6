/**
 * Sync `saveas` on download URLs (docs/development/kodo-protocol.md §2.7, §10.7):
 * `GET <download URL>?<fops>|saveas/<EncodedEntryURI>[/deleteAfterDays/<n>]/sign/<AK>:<sign>` runs the pipeline,
 * stores its result at the entry (overwriting) and answers with the result like a plain fop.
 *
 * The saveas stage is the last stage of the fop pipeline (download.ts `splitQuery` hands it over with the rest); a
 * private source bucket still needs its `e`/`token` (checked by download.ts as for any download). Checks, in order:
 * - 400 `badEntry`/`badRequest`: saveas not last or without a command, a bad EncodedEntryURI (it must name a
 *   key: `<bucket>:<key>`), a bad `deleteAfterDays`, unknown saveas parameters;
 * - 401 `badSaveasSign`: a missing, malformed or wrong signature (auth/saveas-sign.ts);
 * - 631 / 403: the target bucket is missing / the signing key may not write it (the route table's helper,
 *   `call.authorizeAs`, http/route-call.ts).
 * Pipeline errors are answered like a plain fop's (nothing is stored; `/ignore-error/1` does not apply).
 *
 * Answer: 200 with the result (content type, `Content-Length`; JSON as `application/json`), `Cache-Control:
 * no-store` and `ETag` = the stored object's hash. The derived-result cache is bypassed: every saveas request runs
 * the pipeline and stores.
 */
import { createReadStream } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { verifySaveasSign } from '../../auth/saveas-sign.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { parsePipeline } from '../../fops/registry.js';
import { runAndStore, type SaveasTarget } from '../../fops/saveas.js';
import type { BucketRecord, ObjectRecord } from '../../ports/meta.js';
import { decodeEntry } from '../../objects/manage/encoded-entry.js';
import { rawUrlOf } from '../../http/wire.js';

/** A verified saveas request: the pipeline without its saveas stage, and where the result goes. */
export interface SaveasPlan {
  pipeline: string;
  target: SaveasTarget;
}

const SAVEAS_STAGE = /(^|\|)saveas(\/|$)/;

/** The saveas stage's own parameters: the entry, an optional deleteAfterDays; `/sign/…` already cut off. */
function parseStage(stage: string): { bucket: string; key: string; deleteAfterDays?: number } {
  const [, encodedEntry, ...rest] = stage.split('/');
  const { bucket, key } = decodeEntry(encodedEntry);
  let deleteAfterDays: number | undefined;
  for (let i = 0; i < rest.length; i += 2) {
    const name = rest[i]!;
    const value = rest[i + 1] ?? '';
    if (name !== 'deleteAfterDays' || deleteAfterDays !== undefined) throw Errors.badRequest(`saveas: unsupported parameter ${JSON.stringify(name)}`);
    if (!/^[1-9]\d{0,5}$/.test(value)) throw Errors.badRequest('saveas: deleteAfterDays must be a positive integer');
    deleteAfterDays = Number(value);
  }
  return deleteAfterDays === undefined ? { bucket, key } : { bucket, key, deleteAfterDays };
}

/**
 * When the (percent-decoded) pipeline `fop` ends with a saveas stage: parses and verifies it (400, 401, 631, 403 as
 * in the module comment) and returns the plan; otherwise undefined (a plain fop; a saveas stage elsewhere is 400).
 */
export async function prepareSaveas(call: RouteCall<Granary, unknown>, request: FastifyRequest, fop: string): Promise<SaveasPlan | undefined> {
  if (!SAVEAS_STAGE.test(fop)) return undefined;
  const bar = fop.lastIndexOf('|');
  const last = fop.slice(bar + 1);
  if (!last.startsWith('saveas/') && last !== 'saveas') throw Errors.badRequest('saveas must be the last stage of the pipeline');
  if (bar <= 0) throw Errors.badRequest('saveas without a command');
  const pipeline = fop.slice(0, bar);
  if (SAVEAS_STAGE.test(pipeline)) throw Errors.badRequest('saveas must be the last stage of the pipeline');
  const signAt = last.lastIndexOf('/sign/');
  const entry = parseStage(signAt < 0 ? last : last.slice(0, signAt));
  const { accessKey } = verifySaveasSign({ rawUrl: rawUrlOf(request), headers: request.headers }, call.g.secretOf);
  // It is a write: the signing key must own the target bucket (the root key may write every bucket).
  await call.authorizeAs(accessKey, entry.bucket, { action: 'kodo/Upload', key: entry.key });
  return { pipeline, target: { ...entry, accessKey } };
}

/** Runs `plan.pipeline` on `rec`, stores the result at `plan.target` and answers with it. Throws Kodo errors. */
export async function serveSaveas(
  g: Granary,
  bucket: BucketRecord,
  rec: ObjectRecord,
  plan: SaveasPlan,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const stages = parsePipeline(plan.pipeline);
  const { run, stored } = await runAndStore(g, bucket, rec, stages, plan.target);
  const { result } = run;
  reply.code(200).header('cache-control', 'no-store').header('etag', `"${stored.hash}"`).header('content-type', stored.mimeType);
  reply.header('content-length', String(stored.fsize));
  if (request.method === 'HEAD') {
    await run.dispose();
    return reply.send();
  }
  if ('json' in result || 'body' in result) {
    await run.dispose();
    return reply.send('json' in result ? JSON.stringify(result.json) : result.body);
  }
  const stream = createReadStream(result.file);
  stream.once('close', () => void run.dispose());
  return reply.send(stream);
}
