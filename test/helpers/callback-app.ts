/**
 * A local "application server" for upload-callback tests: node:http on 127.0.0.1 with a free port. Every request
 * is recorded (method, URL, headers, raw body) and answered by a per-path handler; a handler may also leave the
 * request unanswered (to provoke a callback timeout). `close()` drops open connections too.
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
  close(): Promise<void>;
}

export async function startCallbackApp(): Promise<CallbackApp> {
  const requests: AppRequest[] = [];
  const handlers = new Map<string, (req: AppRequest) => AppAnswer>();
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
      const handler = handlers.get(rec.url.split('?')[0] ?? '');
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
