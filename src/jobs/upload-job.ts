/**
 * The job a put policy starts (docs/development/kodo-protocol.md §3.1, §4.4): `persistentOps` (the commands themselves) or
 * `persistentWorkflowTemplateID` (a workflow template of the upload token's key, jobs/workflow-templates.ts), with
 * `persistentPipeline`, `persistentNotifyUrl` and `persistentType`. The policy parser refuses both together (400).
 *
 * `uploadJob` resolves and validates it before the object is committed (an unknown template or pipeline, a bad type
 * or notify URL → 400, nothing stored; a saveas bucket that is missing or another account's → 631/403); commands
 * that do not parse are not refused: the object is stored, the job is queued and ends failed (prefop code 3 with
 * the reason), as Kodo answers the Java SDK's `FormUploadTest.testUploadWithFop` (`persistentOps` of
 * `javasdk:vframe_test_target.jpg`). `enqueueUploadJob` queues it once the object is committed.
 */
import type { Granary } from '../context.js';
import type { PutPolicy } from '../policy/put-policy.js';
import { enqueueJob, validateJob } from './submit.js';
import { templateJob } from './workflow-templates.js';

/** A validated upload job, not queued yet. */
export interface UploadJob {
  fops: string;
  notifyUrl?: string;
  pipeline?: string;
  type: number;
  /** `upload`, or `workflow: <name>` for a template. */
  taskFrom: string;
}

/** The job `policy` starts for `accessKey`, validated; undefined when it starts none. Throws 400/631/403. */
export async function uploadJob(g: Granary, accessKey: string, policy: PutPolicy): Promise<UploadJob | undefined> {
  let job: UploadJob;
  if (policy.persistentWorkflowTemplateID !== undefined) {
    const t = await templateJob(g, accessKey, policy.persistentWorkflowTemplateID, {
      pipeline: policy.persistentPipeline,
      notifyUrl: policy.persistentNotifyUrl,
    });
    job = { ...t, type: policy.persistentType };
  } else if (policy.persistentOps) {
    job = {
      fops: policy.persistentOps,
      ...(policy.persistentNotifyUrl ? { notifyUrl: policy.persistentNotifyUrl } : {}),
      ...(policy.persistentPipeline ? { pipeline: policy.persistentPipeline } : {}),
      type: policy.persistentType,
      taskFrom: 'upload',
    };
  } else {
    return undefined;
  }
  await validateJob(g, accessKey, { bucket: policy.bucket, ...job, force: false }, { commandsAtRun: true });
  return job;
}

/** Queues `job` on the committed object; returns its persistentId. */
export async function enqueueUploadJob(
  g: Granary,
  accessKey: string,
  job: UploadJob,
  object: { bucket: string; key: string },
  reqId: string,
): Promise<string> {
  return enqueueJob(g, accessKey, { ...job, bucket: object.bucket, key: object.key, force: false, reqId });
}
