/**
 * The JobQueue port: the persistent-processing jobs (docs/development/kodo-protocol.md §9: pfop and persistentOps), the view of kind
 * `job` of the one durable task queue (ports/tasks.ts; the other kind is the async-fetch tasks of
 * ports/fetch-tasks.ts, with the same life cycle in the same table), and the named pipelines they run in.
 * Implementation: store/sql/jobs.ts, on SQLite and PostgreSQL.
 *
 * The store knows nothing of Kodo: `fops` is the submitted command text and `items` the per-command outcomes as
 * opaque JSON text, both owned by jobs/run-job.ts and jobs/record.ts.
 *
 * Life of a job: `waiting` (code 1) → claim → `running` (code 2; its item outcomes saved one by one as they
 * finish) → `notifying` (code 2 still: items are final, the notify URL is being called) → `done` with the final
 * code 0 succeeded / 3 failed / 4 notification failed. A job without a notify URL goes from `running` straight to
 * `done`. A `running` job whose process died goes back to `waiting` (`requeueAbandoned`, at start and by the
 * reaper of workers/) and continues from its first unfinished item; a `notifying` one is notified again by the
 * next process that claims it (`claimNotifying`).
 *
 * Ownership (several worker processes, workers/): a claim records the claiming process (its identity, given to
 * the store); every later state change of the job requires that owner, and only jobs whose owner's process lease
 * (ports/leases.ts) is gone are taken back from it.
 */

/** `waiting`, `running`, `notifying` (items final, notification in progress), `done` (final code set). */
export type JobState = 'waiting' | 'running' | 'notifying' | 'done';

/** A job as stored. Times are Unix milliseconds. */
export interface JobRecord {
  /** The persistentId. */
  id: string;
  /** AccessKey of the submitter (the pfop signer or the upload token's key): outputs are stored with its rights. */
  accessKey: string;
  /** The source object. */
  bucket: string;
  key: string;
  /** The submitted commands (`;`-separated, each may end with `|saveas/<EncodedEntryURI>`). */
  fops: string;
  notifyUrl?: string;
  /** Pipeline name (`0.default` when none was named). */
  pipeline: string;
  /** 0 normal, 1 idle-time (claimed only when no type-0 job of the pipeline waits). */
  type: number;
  /** Overwrite existing outputs (pfop `force`). */
  force: boolean;
  /** X-Reqid of the submitting request. */
  reqId: string;
  /** Where the job came from: `pfop` (the API) or `upload` (persistentOps of a put policy). */
  taskFrom: string;
  state: JobState;
  /** Public state code: 1 waiting, 2 processing (running or notifying), then 0, 3 or 4. */
  code: number;
  /** Claims so far (a claim counts one; a release at shutdown gives it back). */
  attempts: number;
  /** Item outcomes so far, JSON text (undefined before the first is saved). */
  items?: string;
  createdMs: number;
  updatedMs: number;
}

/** A job to queue: waiting, runnable at once. */
export type NewJob = Omit<JobRecord, 'state' | 'code' | 'attempts' | 'items' | 'updatedMs'>;

/** Filters of `JobQueue.list`: every given field must match. */
export interface JobFilter {
  accessKey?: string;
  pipeline?: string;
  code?: number;
}

/** A named queue. `concurrency` jobs of it run at once (0 pauses it). `createdMs` Unix milliseconds. */
export interface PipelineRecord {
  name: string;
  concurrency: number;
  createdMs: number;
}

export interface JobQueue {
  /** Queues a job durably, then tells the subscribers. */
  enqueue(job: NewJob): Promise<void>;
  get(id: string): Promise<JobRecord | undefined>;
  /**
   * A page of jobs, newest first (the console's Processing screen): only those matching every given filter
   * (`accessKey` the submitter, `pipeline`, `code` 0–4), submitted before the job of sequence `before` (absent = the
   * newest), at most `limit`. `next` is the `before` of the following page, absent on the last one.
   */
  list(filter: JobFilter, before: number | undefined, limit: number): Promise<{ jobs: JobRecord[]; next?: number }>;
  /** How many jobs are in each state (of `accessKey`'s jobs when given). */
  countByState(accessKey?: string): Promise<Record<JobState, number>>;
  /**
   * Atomically takes the next waiting job of `pipeline` — type 0 before type 1, then in submission order — and
   * makes it `running` with one more attempt. Undefined when none waits.
   */
  claim(pipeline: string, nowMs: number): Promise<JobRecord | undefined>;
  /** Names of the pipelines that have waiting jobs. */
  pipelinesWithWaitingJobs(): Promise<string[]>;
  /** Saves the item outcomes of a running job; false when it is not running any more (released). */
  saveItems(id: string, items: string, nowMs: number): Promise<boolean>;
  /**
   * Ends the item phase of a running job: with `notify`, it becomes `notifying` (code stays 2); else `done` with
   * `code`. False when it was not running.
   */
  endItems(id: string, items: string, code: number, notify: boolean, nowMs: number): Promise<boolean>;
  /** A notifying job is `done` with `code` (0/3, or 4 when the notification failed); false when not notifying. */
  finish(id: string, code: number, nowMs: number): Promise<boolean>;
  /** A running job this process gives up on while stopping goes back to `waiting`, its attempt not counted. */
  release(id: string, nowMs: number): Promise<boolean>;
  /**
   * Recovery: every `running` job whose owner holds no process lease (it died: workers/recovery.ts removes a
   * dead process's leases) goes back to
   * `waiting`, and such `notifying` jobs lose their owner (to be claimed by `claimNotifying`); returns how many
   * went back to waiting. A live process's jobs are never touched.
   */
  requeueAbandoned(nowMs: number): Promise<number>;
  /** Takes the oldest `notifying` job without an owner (its process died) for this process, or undefined. */
  claimNotifying(nowMs: number): Promise<JobRecord | undefined>;
  /** How many jobs are waiting, running and notifying (metrics: the queue depth). */
  depth(): Promise<{ waiting: number; running: number; notifying: number }>;

  /** Creates a pipeline or changes its concurrency. */
  putPipeline(name: string, concurrency: number, nowMs: number): Promise<'created' | 'updated'>;
  /** Creates the pipeline with `concurrency` unless it exists (then nothing changes). */
  ensurePipeline(name: string, concurrency: number, nowMs: number): Promise<void>;
  getPipeline(name: string): Promise<PipelineRecord | undefined>;
  /** Every pipeline, by name. */
  listPipelines(): Promise<PipelineRecord[]>;

  /** Calls `listener` whenever a job is queued or a pipeline changes (through this object); returns an unsubscribe. */
  subscribe(listener: () => void): () => void;
}
