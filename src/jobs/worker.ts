/**
 * The job worker: runs queued persistent jobs in this process, per pipeline up to the pipeline's concurrency
 * (re-read from the queue at every look). It looks for work when a job is queued or a pipeline changes through
 * this process (JobQueue.subscribe: pfop, uploads, the pipeline API) and when one of its jobs ends; changes made
 * by another process sharing the data dir (the CLI's `pipeline create`) have no event here and are picked up by a
 * look every REFRESH_MS.
 * CPU is bounded below it by the fop pools (GRANARY_FOP_CONCURRENCY / GRANARY_VIDEO_CONCURRENCY), shared with
 * fops on download URLs, so however many jobs run, processing cannot take more than those slots.
 *
 * A job: run-job.ts runs its commands, then (with a notify URL) it is `notifying` while notify.ts POSTs the
 * record, then `done` with code 0/3, or 4 when every notify attempt failed. The notify body is the final record
 * with the job's code before notification (0 or 3); the stored record afterwards says 0/3, or 4.
 *
 * Jobs left `running` by a process that died are queued again by workers/recovery.ts (at start, and by the reaper
 * while other workers run; they resume at their first unfinished command; GRANARY_JOB_ATTEMPTS bounds how
 * often), and `notifying` ones lose their owner: every look here also claims such jobs and notifies them again.
 * Jobs queued by another worker process wake this one through `poke()` (workers/). Stop: no new job is
 * taken, running commands and notifications are aborted, running jobs are released back to `waiting` (the attempt
 * not counted) and resume at the next start.
 */
import type { Granary } from '../context.js';
import { toKodoError } from '../errors.js';
import { notifyJob } from './notify.js';
import type { JobQueue, JobRecord } from '../ports/job-queue.js';
import { failedItem, finalCode, itemsOf, prefopRecord, type JobItem } from './record.js';
import { runJobCommands, type JobRunOutcome } from './run-job.js';
import { commandTexts } from './commands.js';
import { ensureDefaultPipeline } from './pipelines.js';

/** Interval of the look for changes made by other processes, ms. */
const REFRESH_MS = 5000;

export class JobWorker {
  /** Running jobs by id, with their pipeline. */
  private readonly active = new Map<string, { pipeline: string; done: Promise<void> }>();
  private readonly notifying = new Map<string, Promise<void>>();
  private readonly stopController = new AbortController();
  private unsubscribe: (() => void) | undefined;
  private refresh: NodeJS.Timeout | undefined;
  private started = false;
  private pumping = false;
  private again = false;

  /** A worker over `queue` (normally `g.jobs`); call `start`. */
  constructor(
    private readonly g: Granary,
    private readonly queue: JobQueue,
  ) {}

  private get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /** Subscribes to the queue and starts taking jobs (and notifications a dead process left). */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await ensureDefaultPipeline(this.g);
    this.unsubscribe = this.queue.subscribe(() => this.wake());
    this.refresh = setInterval(() => this.wake(), REFRESH_MS);
    this.refresh.unref();
    this.wake();
  }

  /** Another process may have queued a job or freed a notification: looks (reads first, claims only when due). */
  poke(): void {
    this.wake();
  }

  /** Jobs running now (notifications not counted). */
  get running(): number {
    return this.active.size;
  }

  /** Looks for runnable jobs (called on every event that may have made one runnable). */
  wake(): void {
    if (!this.started || this.stopping) return;
    this.pump().catch((err: unknown) => this.g.log.error({ err }, 'pfop: queue error'));
  }

  private runningIn(pipeline: string): number {
    let n = 0;
    for (const a of this.active.values()) if (a.pipeline === pipeline) n++;
    return n;
  }

  /** Claims jobs of every pipeline with free slots. Re-entrant calls only mark `again`. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        // Notifications a dead process left (their owner's lease is gone; workers/recovery.ts freed them).
        for (let job; !this.stopping && (job = await this.queue.claimNotifying(this.g.clock.nowMs())); ) {
          this.launchNotify(job, undefined);
        }
        const waiting = await this.queue.pipelinesWithWaitingJobs();
        if (waiting.length === 0) continue;
        const limits = new Map((await this.queue.listPipelines()).map((p) => [p.name, p.concurrency]));
        for (const name of waiting) {
          // A job naming a pipeline that no longer exists runs at the default concurrency.
          const limit = limits.get(name) ?? this.g.config.jobConcurrency;
          while (!this.stopping && this.runningIn(name) < limit) {
            const job = await this.queue.claim(name, this.g.clock.nowMs());
            if (!job) break;
            if (this.stopping) {
              await this.queue.release(job.id, this.g.clock.nowMs()).catch(() => undefined);
              break;
            }
            this.launch(job);
          }
        }
      } while (this.again && !this.stopping);
    } finally {
      this.pumping = false;
    }
  }

  private launch(job: JobRecord): void {
    const done = this.run(job)
      .catch((err: unknown) => this.g.log.error({ err, job: job.id }, 'pfop: job error'))
      .finally(() => {
        this.active.delete(job.id);
        this.wake();
      });
    this.active.set(job.id, { pipeline: job.pipeline, done });
  }

  /** Runs a claimed job's commands, then ends it (or hands it to notification). */
  private async run(job: JobRecord): Promise<void> {
    const log = this.g.log.child({ job: job.id });
    let outcome: JobRunOutcome;
    try {
      outcome = await runJobCommands(this.g, job, this.stopController.signal);
    } catch (err) {
      // An unexpected failure (e.g. the store) ends the job as failed rather than leaving it processing.
      log.error({ err }, 'pfop: job failed unexpectedly');
      const error = toKodoError(err).message;
      outcome = { aborted: false, items: commandTexts(job.fops).map((cmd) => failedItem(cmd, error, 0)) };
    }
    if (outcome.aborted) {
      if (this.stopping) await this.queue.release(job.id, this.g.clock.nowMs());
      return;
    }
    const code = finalCode(outcome.items);
    const items = JSON.stringify(outcome.items);
    const notify = job.notifyUrl !== undefined;
    if (!(await this.queue.endItems(job.id, items, code, notify, this.g.clock.nowMs()))) return;
    log.info({ code, items: outcome.items.length }, 'pfop: commands done');
    if (!notify) this.g.metrics?.jobsFinished.inc({ code: String(code) });
    if (notify) this.launchNotify({ ...job, state: 'notifying', items }, outcome.items);
  }

  /** Notifies a job whose items are final and ends it with its code (4 when the notification failed). */
  private launchNotify(job: JobRecord, known: JobItem[] | undefined): void {
    const task = (async () => {
      const items = known ?? itemsOf(job, commandTexts(job.fops));
      const code = finalCode(items);
      const body = JSON.stringify(prefopRecord({ ...job, code }, items));
      let failure: string | undefined;
      try {
        failure = await notifyJob(this.g, job.notifyUrl ?? '', body, this.stopController.signal);
      } catch {
        return; // stopping: notified again at the next start
      }
      if (failure !== undefined) this.g.log.warn({ job: job.id, url: job.notifyUrl, failure }, 'pfop: notify failed, code 4');
      if (await this.queue.finish(job.id, failure === undefined ? code : 4, this.g.clock.nowMs())) {
        this.g.metrics?.jobsFinished.inc({ code: String(failure === undefined ? code : 4) });
      }
    })()
      .catch((err: unknown) => this.g.log.error({ err, job: job.id }, 'pfop: notify error'))
      .finally(() => this.notifying.delete(job.id));
    this.notifying.set(job.id, task);
  }

  /**
   * Stops taking jobs, aborts running commands and notifications, and releases running jobs back to the queue.
   * Resolves when nothing more will be written by this worker.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopController.abort();
    this.unsubscribe?.();
    clearInterval(this.refresh);
    await Promise.allSettled([...[...this.active.values()].map((a) => a.done), ...this.notifying.values()]);
  }
}
