/**
 * Helpers for persistent-processing tests: the official SDK's `OperationManager.pfop`/`prefop` as promises,
 * waiting for a job to end (polling prefop: no event tells the client), signed management calls for pipelines,
 * and a notify receiver whose answers a test releases when it chooses.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import qiniu from 'qiniu';
import { urlsafeB64Encode } from '../../src/auth/base64.js';
import type { PrefopRecord } from '../../src/jobs/record.js';
import { readAnswer, type RawAnswer } from './upload.js';
import type { TestServer } from './server.js';

/** A prefop record as the server answers it (the shape src/jobs/record.ts declares). */
export type Record = PrefopRecord;

/** `saveas/<EncodedEntryURI>` for `bucket:key`. */
export function saveas(bucket: string, key: string): string {
  return `saveas/${urlsafeB64Encode(`${bucket}:${key}`)}`;
}

/** `OperationManager.pfop` → status and body. */
export function sdkPfop(
  s: TestServer,
  bucket: string,
  key: string,
  fops: string[],
  pipeline: string,
  options: { notifyURL?: string; force?: boolean; type?: string } = {},
): Promise<{ status: number; data: { persistentId?: string; error?: string } }> {
  const om = new qiniu.fop.OperationManager(s.mac, s.zoneConfig());
  return new Promise((resolve, reject) => {
    om.pfop(bucket, key, fops, pipeline, options as qiniu.fop.PfopOptions, (err, body, info) => {
      if (err) reject(err);
      else resolve({ status: (info as { statusCode: number }).statusCode, data: body as { persistentId?: string } });
    });
  });
}

/** `OperationManager.prefop` (POST, form body, no credentials) → status and record. */
export function sdkPrefop(s: TestServer, id: string): Promise<{ status: number; data: Record }> {
  const om = new qiniu.fop.OperationManager(s.mac, s.zoneConfig());
  return new Promise((resolve, reject) => {
    om.prefop(id, (err, body, info) => {
      if (err) reject(err);
      else resolve({ status: (info as { statusCode: number }).statusCode, data: body as Record });
    });
  });
}

/** Polls prefop (every 20 ms) until the job's code is final (0, 3 or 4); fails after `timeoutMs`. */
export async function waitFinal(s: TestServer, id: string, timeoutMs = 20_000): Promise<Record> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await sdkPrefop(s, id);
    if (r.status !== 200) throw new Error(`prefop ${id}: ${r.status} ${JSON.stringify(r.data)}`);
    if (r.data.code !== 1 && r.data.code !== 2) return r.data;
    if (Date.now() > end) throw new Error(`job ${id} still ${r.data.code} after ${timeoutMs} ms`);
    await delay(20);
  }
}

/** A management request signed with `QBox` (form body, if any, signed). */
export async function signedPost(s: TestServer, path: string, form?: string, method = 'POST'): Promise<RawAnswer> {
  const url = `${s.url}${path}`;
  const headers: { [k: string]: string } = {
    authorization: qiniu.util.generateAccessToken(s.mac, url, form),
  };
  if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  return readAnswer(await fetch(url, { method, headers, ...(form !== undefined ? { body: form } : {}) }));
}

/** Creates or updates a pipeline through the management call. */
export async function putPipeline(s: TestServer, name: string, concurrency: number): Promise<RawAnswer> {
  return signedPost(s, `/pipelines/${name}?concurrency=${concurrency}`);
}

/** A received notification and the means to answer it. */
export interface Notification {
  body: string;
  answer(status: number): void;
}

/** A notify receiver: each request is handed to the test, which answers it (or not) when it likes. */
export interface NotifyReceiver {
  url: string;
  /** Resolves with the next notification (in arrival order). */
  next(): Promise<Notification>;
  /** How many requests arrived. */
  count(): number;
  close(): Promise<void>;
}

export async function startNotifyReceiver(): Promise<NotifyReceiver> {
  const queue: Notification[] = [];
  const waiters: Array<(n: Notification) => void> = [];
  let count = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count++;
      const n: Notification = {
        body: Buffer.concat(chunks).toString('utf8'),
        answer: (status) => res.writeHead(status, { 'content-type': 'application/json' }).end('{}'),
      };
      const w = waiters.shift();
      if (w) w(n);
      else queue.push(n);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/notify`,
    next: () => {
      const n = queue.shift();
      return n ? Promise.resolve(n) : new Promise((resolve) => waiters.push(resolve));
    },
    count: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
