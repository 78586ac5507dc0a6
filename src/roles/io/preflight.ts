/**
 * CORS preflights for the downloads of a bucket with CORS rules (buckets/cors.ts). server.ts registers this hook
 * before the global CORS plugin, so it sees an `OPTIONS` first:
 * - path style `OPTIONS /<bucket>/<key>`, or on a bound download domain an `OPTIONS` whose
 *   `Access-Control-Request-Method` is GET or HEAD (other methods on a bound domain are uploads or API calls);
 * - of a bucket that has rules: a preflight (`Origin` and `Access-Control-Request-Method`) matching a rule is
 *   answered 204 with that rule's headers (origin echoed, its methods, the requested headers, `Max-Age`); one matching
 *   none is refused 403 `corsRefused` (JSON, no CORS headers, as S3's 403 for a preflight no rule allows; Kodo's
 *   answer is not documented); an `OPTIONS` that is not a preflight is answered 204 with no CORS headers.
 * Everything else (buckets without rules, uploads, management routes) goes on to the global `*` preflight.
 */
import type { FastifyInstance } from 'fastify';
import { findCorsRule, preflightHeaders, requestedHeaders } from '../../buckets/cors.js';
import type { Granary } from '../../context.js';
import { Errors, storageError } from '../../errors.js';
import { sendError } from '../../http/wire.js';
import { headerText } from './bucket-settings.js';
import { downloadTarget } from './download.js';

const DOWNLOAD_METHODS = new Set(['GET', 'HEAD']);

/** Registers the `onRequest` hook answering preflights of buckets with CORS rules (call before the CORS plugin). */
export function registerBucketPreflight(app: FastifyInstance, g: Granary): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'OPTIONS') return;
    const method = headerText(request, 'access-control-request-method').toUpperCase();
    let t;
    try {
      t = downloadTarget(g, request);
    } catch {
      return; // a malformed path: not a download, the global preflight answers
    }
    if (!t || (t.viaDomain && !DOWNLOAD_METHODS.has(method))) return;
    let rules;
    try {
      rules = (await g.meta.getBucket(t.bucket))?.settings.cors;
    } catch (err) {
      request.log.error({ err }, 'reading the bucket of a preflight failed');
      return sendError(reply, storageError(err) ?? Errors.internal());
    }
    if (!rules) return;
    reply.header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
    const origin = headerText(request, 'origin');
    if (origin === '' || method === '') return reply.code(204).send();
    const req = { origin, method, headers: requestedHeaders(headerText(request, 'access-control-request-headers')) };
    const rule = findCorsRule(rules, req);
    if (!rule) {
      const asked = req.headers.length > 0 ? ` with headers ${req.headers.join(', ')}` : '';
      // Sent here, not thrown: the route this hook runs for (the CORS plugin's OPTIONS *) predates the error handler.
      return sendError(reply, Errors.corsRefused(`no rule allows ${method} from ${origin}${asked}`));
    }
    return reply.headers(preflightHeaders(rule, req)).code(204).send();
  });
}
