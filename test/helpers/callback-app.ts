/**
 * A local "application server" for upload-callback tests: node:http on 127.0.0.1 with a free port. Every request
 * is recorded (method, URL, headers, raw body) and answered by a per-path handler; a handler may also leave the
 * request unanswered (to provoke a callback timeout). `close()` drops open connections too. `received` awaits
 * requests without polling (event notifications arrive after the operation that caused them answered).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the application received. */
export interface AppRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: IncomingHttpHeaders;
  /** Raw body text. */
  body: string;
}

/** What the application answers: a status and a JSON-serialisable body (or raw text), or 'hang' to never answer. */
export type AppAnswer = { status: number; json?: unknown; text?: string } | 'hang';

export interface CallbackApp {
  /** `http://127.0.0.1:<port>` */
  base: string;
  requests: AppRequest[];
  /** Sets the answer for requests whose path (without query) is `path`; unknown paths get 404. */
  on(path: string, answer: (req: AppRequest) => AppAnswer): void;
  /**
   * Resolves with the requests to `path` (without query) once there are at least `count` of them (counting those
   * already received); rejects after `timeoutMs`.
   */
  received(path: string, count: number, timeoutMs?: number): Promise<AppRequest[]>;
  close(): Promise<void>;
}

export async function startCallbackApp(): Promise<CallbackApp> {
  const requests: AppRequest[] = [];
  const handlers = new Map<string, (req: AppRequest) => AppAnswer>();
  const waiters = new Set<() => void>();
  const pathOf = (url: string): string => url.split('?')[0] ?? '';
  const to = (path: string): AppRequest[] => requests.filter((r) => pathOf(r.url) === path);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: AppRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(rec);
      for (const wake of waiters) wake();
      const handler = handlers.get(pathOf(rec.url));
      const answer: AppAnswer = handler ? handler(rec) : { status: 404, json: { error: 'no handler' } };
      if (answer === 'hang') return;
      const text = answer.text ?? JSON.stringify(answer.json ?? {});
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    on: (path, answer) => handlers.set(path, answer),
    received: (path, count, timeoutMs = 15_000) =>
      new Promise<AppRequest[]>((resolve, reject) => {
        const check = (): void => {
          if (to(path).length < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(to(path));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${count} requests to ${path} (got ${to(path).length})`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
