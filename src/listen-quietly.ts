/**
 * `listenQuietly(app, options)`: fastify's `listen` without its `Server listening at …` info record. Where Granary
 * listens is said once, in words a reader can use (cli/serve.ts: the start banner on a terminal, the
 * `granary listening` record otherwise); fastify's record would repeat it per listener and per worker, and for a
 * worker name its private socket (workers/handoff.ts), which means nothing outside. Warnings and errors still log.
 * Requests are not affected: none is handled before `listen` resolves (its record is written in the same tick).
 */
import type { FastifyInstance, FastifyListenOptions } from 'fastify';

export async function listenQuietly(app: FastifyInstance, options: FastifyListenOptions): Promise<string> {
  const level = app.log.level;
  app.log.level = 'warn';
  try {
    return await app.listen(options);
  } finally {
    app.log.level = level;
  }
}
