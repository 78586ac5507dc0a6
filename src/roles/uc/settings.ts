/**
 * Bucket download settings on the uc role (docs/development/kodo-protocol.md §8.6, §13.2). Management credential; the bucket authorised
 * like every bucket operation (631 missing, 403 another account's); parameters checked first (400 naming the
 * parameter or field). Success: 200 `{}`, except `corsRules/get`.
 * - `POST /maxAge?bucket=&maxAge=<s>` (query or form; stored as set, ≤ 0 serves 31536000), SDK `putBucketMaxAge`
 *   (buckets/max-age.ts);
 * - `POST /referAntiLeech?bucket=&mode=<0|1|2>&norefer=<0|1>&pattern=<a;b>&source_enabled=<0|1>` (query or form),
 *   SDK `putReferAntiLeech` (buckets/referer.ts);
 * - `POST /corsRules/set/<bucket>` with a JSON array body (the SDK sends it as `application/x-www-form-urlencoded`,
 *   signed; `application/json` works too), SDK `putCorsRules`; `GET|POST /corsRules/get/<bucket>` → the array as
 *   set, verbatim (`[]` when none), SDK `getCorsRules` (buckets/cors.ts);
 * - `POST /accessMode/<bucket>/mode/<0|1>`, SDK `putBucketAccessStyleMode` (buckets/protection.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizeBucket } from '../../auth/authorize.js';
import { corsRulesAnswer, parseCorsRulesAsSent, setCorsRules } from '../../buckets/cors.js';
import { parseMaxAge, setMaxAge } from '../../buckets/max-age.js';
import { setProtected } from '../../buckets/protection.js';
import { parseRefererSettings, setReferer } from '../../buckets/referer.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { bodyBuffer, params, READ_METHODS, requiredParam, requireManagement, sendEmpty, sendJson } from '../http.js';

function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

/** Registers the bucket settings routes. */
export function registerBucketSettings(app: FastifyInstance, g: Granary): void {
  app.post('/maxAge', async (request, reply) => {
    const caller = requireManagement(g, request);
    const p = params(request);
    const seconds = parseMaxAge(requiredParam(p, 'maxAge'));
    const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(p, 'bucket'));
    await setMaxAge(g, bucket.name, seconds);
    return sendEmpty(reply);
  });

  app.post('/referAntiLeech', async (request, reply) => {
    const caller = requireManagement(g, request);
    const p = params(request);
    const name = requiredParam(p, 'bucket');
    const settings = parseRefererSettings({
      mode: p.get('mode'),
      norefer: p.get('norefer'),
      pattern: p.get('pattern'),
      sourceEnabled: p.get('source_enabled'),
    });
    const bucket = await authorizeBucket(g, caller.accessKey, name);
    await setReferer(g, bucket.name, settings);
    return sendEmpty(reply);
  });

  app.post('/corsRules/set/:bucket', async (request, reply) => {
    const caller = requireManagement(g, request);
    const body = bodyBuffer(request);
    if (!body || body.length === 0) throw Errors.badCorsRules('body: a JSON array of rules is required');
    const { rules, asSent } = parseCorsRulesAsSent(body.toString('utf8'));
    const bucket = await authorizeBucket(g, caller.accessKey, pathParam(request, 'bucket'));
    await setCorsRules(g, bucket.name, rules, asSent);
    return sendEmpty(reply);
  });

  app.route({
    method: READ_METHODS,
    url: '/corsRules/get/:bucket',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      const bucket = await authorizeBucket(g, caller.accessKey, pathParam(request, 'bucket'));
      return sendJson(reply, 200, corsRulesAnswer(bucket.settings));
    },
  });

  app.post('/accessMode/:bucket/mode/:mode', async (request, reply) => {
    const caller = requireManagement(g, request);
    const mode = pathParam(request, 'mode');
    if (mode !== '0' && mode !== '1') throw Errors.badRequest(`accessMode mode must be 0 or 1, got ${JSON.stringify(mode)}`);
    const bucket = await authorizeBucket(g, caller.accessKey, pathParam(request, 'bucket'));
    await setProtected(g, bucket.name, mode === '1');
    return sendEmpty(reply);
  });
}
