/**
 * The moderation model as the server sees it (the `Moderation` of fops/types.ts): one `worker_threads` worker
 * (moderation-worker.ts) owning TensorFlow.js and the nsfwjs model, started lazily by the first request, so the
 * model costs nothing until `nrop` is used and inference never blocks the event loop.
 *
 * Requests queue here and go to the worker one at a time (the pixels' buffer is transferred, not copied).
 * - The worker dies (a crash, or a model that cannot load): the request in flight fails with 599
 *   (`Errors.modelFailed`), and the next request starts a new worker.
 * - A request's signal aborts (the fop time limit, shutdown): a queued request leaves the queue; the request in
 *   flight fails and its worker is terminated (a stuck inference cannot hold the queue), a new one starts for
 *   the next request.
 * - `close()` (server shutdown) terminates the worker and fails whatever is still queued.
 *
 * Running from source (tsx, vitest) the worker is a `.ts` file that plain Node cannot load, so a two-line
 * bootstrap registers tsx in the thread first; from the compiled dist/ the `.js` worker runs directly.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { Errors, isKodoError } from '../errors.js';
import type { ClassifyReply, ClassifyRequest } from './moderation-worker.js';
import type { Moderation, NsfwPrediction } from './types.js';

interface Job {
  id: number;
  pixels: Buffer;
  signal: AbortSignal;
  resolve(p: NsfwPrediction[]): void;
  reject(err: Error): void;
  onAbort(): void;
}

/**
 * How to start the worker: the compiled `.js` next to this file directly; or, running from `.ts` sources (tsx,
 * vitest, whose loaders do not reach worker threads), an eval'd bootstrap that registers tsx's ESM hooks in the
 * thread (tsx's ESM API: `tsx/esm/api` → dist/esm/api/index.mjs; its CommonJS build cannot register from an eval'd
 * script) and then imports the `.ts` worker.
 */
function workerEntry(): { filename: string | URL; options: { eval?: boolean } } {
  const self = import.meta.url;
  if (!self.endsWith('.ts')) return { filename: new URL('./moderation-worker.js', self), options: {} };
  const entry = new URL('./moderation-worker.ts', self).href;
  const tsxDir = dirname(createRequire(self).resolve('tsx/package.json'));
  const api = pathToFileURL(join(tsxDir, 'dist', 'esm', 'api', 'index.mjs')).href;
  const code = `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return { filename: code, options: { eval: true } };
}

/**
 * The worker-backed model. Events (for tests and logs): `dispatch` (a request went to the worker), `start`
 * (a worker thread was started).
 */
export class ModerationModel extends EventEmitter implements Moderation {
  private worker: Worker | undefined;
  private current: Job | undefined;
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Worker threads started so far. */
  starts = 0;

  constructor(private readonly log?: Logger) {
    super();
  }

  /** Whether a worker thread is running (started and not yet stopped). */
  get hasWorker(): boolean {
    return this.worker !== undefined;
  }

  classify(pixels: Buffer, signal: AbortSignal): Promise<NsfwPrediction[]> {
    if (this.closed) return Promise.reject(Errors.modelFailed('the server is shutting down'));
    if (signal.aborted) return Promise.reject(Errors.fopFailed('nrop: processing timed out'));
    return new Promise<NsfwPrediction[]>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        pixels,
        signal,
        resolve,
        reject,
        onAbort: () => this.abort(job),
      };
      signal.addEventListener('abort', job.onAbort, { once: true });
      this.queue.push(job);
      this.pump();
    });
  }

  /**
   * Terminates the worker (if any): the request in flight fails with 599, queued requests go to a new worker.
   * Used on an aborted inference, and by tests to stand in for a crash.
   */
  async terminateWorker(reason = 'the moderation worker was stopped'): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.dropWorker(w, Errors.modelFailed(reason));
    await w.terminate();
    this.pump();
  }

  /** Shutdown: fails queued requests, terminates the worker. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.finish(job, Errors.modelFailed('the server is shutting down'));
    const w = this.worker;
    if (w) {
      this.dropWorker(w, Errors.modelFailed('the server is shutting down'));
      await w.terminate();
    }
  }

  /** Sends the next queued request to the worker, starting one when none runs. */
  private pump(): void {
    if (this.current || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    const worker = this.worker ?? this.startWorker();
    this.current = job;
    // A fresh ArrayBuffer: sharp's output may be a view of memory that cannot be transferred.
    const copy = new Uint8Array(job.pixels.length);
    copy.set(job.pixels);
    worker.postMessage({ id: job.id, pixels: copy.buffer } satisfies ClassifyRequest, [copy.buffer]);
    this.emit('dispatch', job.id);
  }

  private startWorker(): Worker {
    const { filename, options } = workerEntry();
    const worker = new Worker(filename, options);
    worker.unref();
    this.worker = worker;
    this.starts++;
    this.emit('start', this.starts);
    worker.on('message', (msg: ClassifyReply) => {
      if (this.worker !== worker) return;
      const job = this.current;
      if (!job || job.id !== msg.id) return;
      this.current = undefined;
      if ('predictions' in msg) this.finish(job, undefined, msg.predictions);
      else this.finish(job, Errors.modelFailed(msg.error));
      this.pump();
    });
    worker.on('error', (err: Error) => {
      if (this.worker !== worker) return;
      this.log?.error({ err }, 'moderation worker failed');
      this.dropWorker(worker, Errors.modelFailed(err.message));
      this.pump();
    });
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.log?.error({ code }, 'moderation worker exited');
      this.dropWorker(worker, Errors.modelFailed(`the moderation worker exited with code ${code}`));
      this.pump();
    });
    return worker;
  }

  /** Forgets `worker` (later events of it are ignored) and fails the request in flight with `err`. */
  private dropWorker(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    const job = this.current;
    this.current = undefined;
    if (job) this.finish(job, err);
  }

  private abort(job: Job): void {
    const timedOut = Errors.fopFailed('nrop: processing timed out');
    const i = this.queue.indexOf(job);
    if (i >= 0) {
      this.queue.splice(i, 1);
      this.finish(job, timedOut);
      return;
    }
    if (this.current === job && this.worker) {
      const w = this.worker;
      this.dropWorker(w, timedOut);
      void w.terminate();
      this.pump();
    }
  }

  private finish(job: Job, err: Error | undefined, predictions?: NsfwPrediction[]): void {
    job.signal.removeEventListener('abort', job.onAbort);
    if (err) job.reject(isKodoError(err) ? err : Errors.modelFailed(err.message));
    else job.resolve(predictions ?? []);
  }
}
