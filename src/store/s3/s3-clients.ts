/**
 * The connections of the S3 BlobStore to the object store, and the bounds of every call made on them, so that a
 * store that stops answering (radosgw frozen, an OSD full: radosgw then blocks writes instead of refusing them)
 * costs a request at most GRANARY_S3_TIMEOUT before it answers 599 `the object store (S3) failed or did not answer`
 * (docs/operations/object-store-timeouts.md).
 *
 * Two pools. `reads` (GetObject, HeadBucket, the LIST calls) and `writes` (PutObject, UploadPart, the multipart
 * calls, DeleteObject) are two S3 clients, each on its own keep-alive HTTP agent with a bounded number of sockets
 * (READ_SOCKETS, WRITE_SOCKETS). Chosen over one pool with a semaphore: an upload holds its connection while its body
 * flows at the client's pace, and a stuck store holds it until the timeout; with one pool 55 stuck uploads took
 * every socket and downloads queued behind them. Now uploads can only exhaust the write pool: downloads keep theirs.
 * The agents are passed to the SDK as instances, so it never makes the unbounded per-request agent it otherwise
 * uses for `Expect: 100-continue` bodies.
 *
 * Bounds (`S3Timeouts`):
 * - getting a connection, `connectMs` (GRANARY_S3_CONNECT_TIMEOUT): a free socket of the pool or a new TCP
 *   connection (the SDK's connection timeout runs from the call's start until its socket is connected, so a wait
 *   in the pool's queue counts too);
 * - a call without a streamed body (`within`): the whole call, retries included, within `requestMs`
 *   (GRANARY_S3_TIMEOUT), by an AbortSignal; a GetObject until its headers (its body: S3ReadStream's watchdog);
 * - a call sending a body (`streaming`: PutObject, UploadPart): no whole-call deadline, since a large part on a slow
 *   link may take long while bytes flow; instead the write pool's socket idle timeout, `requestMs` without a byte
 *   sent or received (the body, then the answer).
 * A call that timed out is not tried again (s3-retry.ts). Every call fails at once once `abort()` was called (a
 * stop past GRANARY_STOP_TIMEOUT, main.ts), and so does every later one.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { fromS3 } from './s3-errors.js';
import { s3RetryStrategy } from './s3-retry.js';

/** Sockets of the read pool: downloads hold theirs while the client reads at its pace. */
export const READ_SOCKETS = 128;
/** Sockets of the write pool: each upload in flight holds one while a part or a PutObject is sent. */
export const WRITE_SOCKETS = 64;

/** Bounds of the S3 calls, ms (see the module comment). */
export interface S3Timeouts {
  /** GRANARY_S3_TIMEOUT: whole small calls; silence of a connection carrying a body. */
  requestMs: number;
  /** GRANARY_S3_CONNECT_TIMEOUT: getting a connection (pool queue, TCP connect). */
  connectMs: number;
}

/** The defaults of GRANARY_S3_TIMEOUT and GRANARY_S3_CONNECT_TIMEOUT (config.ts), ms. */
export const DEFAULT_S3_TIMEOUTS: S3Timeouts = { requestMs: 30_000, connectMs: 5_000 };

/** Where the store is: the SDK settings of a location (s3-blob-store.ts S3Location). */
export type S3Endpoint = Pick<S3ClientConfig, 'region' | 'forcePathStyle' | 'endpoint' | 'credentials'>;

/** An error named like the SDK's own timeouts (s3-errors.ts maps it to `S3_Timeout`). */
function timeoutError(ms: number, cause?: unknown): Error {
  return Object.assign(new Error(`no answer within ${ms} ms`, { cause }), { name: 'TimeoutError' });
}

/** The reads and writes clients of one S3 BlobStore, and the bounded ways to call them. */
export class S3Connections {
  readonly reads: S3Client;
  readonly writes: S3Client;
  private readonly stopping = new AbortController();

  constructor(
    endpoint: S3Endpoint,
    readonly timeouts: S3Timeouts,
  ) {
    this.reads = this.client(endpoint, READ_SOCKETS, 0);
    this.writes = this.client(endpoint, WRITE_SOCKETS, timeouts.requestMs);
  }

  /** One client on its own agents; `idleMs` > 0: a connection silent for that long fails its call. */
  private client(endpoint: S3Endpoint, maxSockets: number, idleMs: number): S3Client {
    const agent = { keepAlive: true, maxSockets };
    return new S3Client({
      ...endpoint,
      retryStrategy: s3RetryStrategy(),
      requestHandler: new NodeHttpHandler({
        connectionTimeout: this.timeouts.connectMs,
        socketTimeout: idleMs,
        httpAgent: new HttpAgent(agent),
        httpsAgent: new HttpsAgent(agent),
      }),
    });
  }

  /**
   * Calls `fn` when the store is aborted (at once if it was); returns the function that stops listening. For
   * streams that outlive their call (a GetObject body).
   */
  onAbort(fn: () => void): () => void {
    const signal = this.stopping.signal;
    if (signal.aborted) {
      fn();
      return () => undefined;
    }
    signal.addEventListener('abort', fn, { once: true });
    return () => signal.removeEventListener('abort', fn);
  }

  /** A controller aborted with `parent` and with the store; `release` stops following them. */
  private linked(parent: AbortSignal | undefined): { ctl: AbortController; release: () => void } {
    const ctl = new AbortController();
    const abort = (): void => ctl.abort();
    const stopFollowing = this.onAbort(abort);
    if (parent?.aborted) abort();
    else parent?.addEventListener('abort', abort, { once: true });
    return {
      ctl,
      release: () => {
        stopFollowing();
        parent?.removeEventListener('abort', abort);
      },
    };
  }

  /**
   * Runs a call without a streamed body: `send` gets the signal to hand the SDK; the call fails with `S3_Timeout`
   * once `timeouts.requestMs` have passed (even if the SDK did not heed the signal), with `S3_AbortError` when
   * `parent` or the store is aborted. Errors are S3StoreErrors naming `what` ("HeadBucket") and `key`.
   */
  async within<T>(what: string, key: string, send: (signal: AbortSignal) => Promise<T>, parent?: AbortSignal): Promise<T> {
    const { ctl, release } = this.linked(parent);
    const ms = this.timeouts.requestMs;
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      const fail = (): void => reject(timedOut ? timeoutError(ms) : Object.assign(new Error('aborted'), { name: 'AbortError' }));
      timer = setTimeout(() => {
        timedOut = true;
        ctl.abort();
      }, ms);
      if (ctl.signal.aborted) fail();
      else ctl.signal.addEventListener('abort', fail, { once: true });
    });
    expired.catch(() => undefined);
    try {
      return await Promise.race([send(ctl.signal), expired]);
    } catch (err) {
      throw fromS3(timedOut ? timeoutError(ms, err) : err, what, key);
    } finally {
      clearTimeout(timer);
      release();
    }
  }

  /**
   * Runs a call sending a body (PutObject, UploadPart) on the write pool: bounded by the connection timeout and
   * the pool's idle timeout, never cut while bytes flow; fails with `S3_AbortError` when `parent` or the store is
   * aborted. Errors are S3StoreErrors naming `what` and `key`.
   */
  async streaming<T>(what: string, key: string, send: (signal: AbortSignal) => Promise<T>, parent?: AbortSignal): Promise<T> {
    const { ctl, release } = this.linked(parent);
    try {
      return await send(ctl.signal);
    } catch (err) {
      throw fromS3(err, what, key);
    } finally {
      release();
    }
  }

  /** An `S3_Timeout` error for `what` on `key`: a stream that went silent for `timeouts.requestMs`. */
  silence(what: string, key: string): Error {
    return fromS3(timeoutError(this.timeouts.requestMs), what, key);
  }

  /** Fails every call in flight, and every later one (a stop past its timeout). */
  abort(): void {
    this.stopping.abort();
  }

  /** Closes both pools' connections. */
  destroy(): void {
    this.reads.destroy();
    this.writes.destroy();
  }
}
