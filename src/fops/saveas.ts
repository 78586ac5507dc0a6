/**
 * The store step of a sync `saveas` on a download URL (docs/development/kodo-protocol.md §10.7): runs the pipeline on the source object
 * (no derived-result cache: every request runs and stores) and commits the result at the target entry through
 * `putObject` with an internal put policy `<bucket>:<key>` (overwrite semantics, like Qiniu's sync saveas; an
 * optional `deleteAfterDays`) and the rights of the AccessKey that signed the saveas. JSON results (imageInfo, …)
 * are stored as `application/json`. The caller (roles/io/saveas.ts) answers with the run's result, then disposes
 * the run.
 */
import type { Granary } from '../context.js';
import { putObject } from '../objects/put-object.js';
import { receiveBody } from '../objects/receive.js';
import { parsePutPolicy } from '../policy/put-policy.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { executeFops, resultStream, type FopRun } from './execute.js';
import type { FopStage } from './types.js';

/** The internal put policy of a saveas output never expires. */
const NO_DEADLINE = 0xffffffff;

/** Where a sync saveas stores its result, and with whose rights. */
export interface SaveasTarget {
  bucket: string;
  key: string;
  /** AccessKey that signed the saveas (must be allowed on `bucket`; putObject checks it again). */
  accessKey: string;
  /** Days after which the stored object expires (saveas `/deleteAfterDays/<n>`). */
  deleteAfterDays?: number;
}

/** A finished saveas: the run (serve `run.result`, then `run.dispose()`) and the committed object. */
export interface SaveasOutcome {
  run: FopRun;
  stored: ObjectRecord;
}

/**
 * Runs `stages` on `rec` of `bucket` and stores the result at `target`. Throws the run's Kodo errors (nothing is
 * stored then), 413 when the result exceeds GRANARY_MAX_OBJECT_SIZE, and putObject's errors (631/403 target
 * bucket). The run is disposed when this throws.
 */
export async function runAndStore(
  g: Granary,
  bucket: BucketRecord,
  rec: ObjectRecord,
  stages: FopStage[],
  target: SaveasTarget,
): Promise<SaveasOutcome> {
  const run = await executeFops(g, bucket, rec, stages);
  try {
    const policy = parsePutPolicy({
      scope: `${target.bucket}:${target.key}`,
      deadline: NO_DEADLINE,
      ...(target.deleteAfterDays !== undefined ? { deleteAfterDays: target.deleteAfterDays } : {}),
    });
    const { stream, contentType } = resultStream(run.result);
    const body = await receiveBody(g, stream, { maxBytes: g.config.maxObjectBytes, inlineMax: g.config.inlineMaxBytes });
    const put = await putObject(g, body, { policy, accessKey: target.accessKey, clientKey: target.key, clientMime: contentType, fname: '', custom: {}, meta: {} });
    g.metrics?.upload('saveas', put.record.fsize);
    return { run, stored: put.record };
  } catch (err) {
    await run.dispose();
    throw err;
  }
}
