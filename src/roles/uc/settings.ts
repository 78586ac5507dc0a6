/**
 * Bucket download settings on the uc role (docs/development/kodo-protocol.md §8.6, §13.2). Management credential (the route table's auth step); the bucket
 * authorised like every bucket operation (631 missing, 403 another account's); parameters checked first (400 naming the
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
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import { corsRulesAnswer, parseCorsRulesAsSent, setCorsRules } from '../../buckets/cors.js';
import { parseMaxAge, setMaxAge } from '../../buckets/max-age.js';
import { setProtected } from '../../buckets/protection.js';
import { parseRefererSettings, setReferer } from '../../buckets/referer.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import type { RouteCall } from '../../http/route-call.js';
import { bodyBuffer, params, requiredParam, sendEmpty, sendJson } from '../../http/wire.js';

function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

type Call = RouteCall<Granary, Caller>;

/** `POST /maxAge?bucket=&maxAge=<s>`: the value checked (400) before the bucket. */
export async function maxAge(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const p = params(request);
  const seconds = parseMaxAge(requiredParam(p, 'maxAge'));
  const bucket = await call.authorize(requiredParam(p, 'bucket'));
  await setMaxAge(call.g, bucket.name, seconds);
  return sendEmpty(reply);
}

/** `POST /referAntiLeech?bucket=&mode=&norefer=&pattern=&source_enabled=`: the settings checked before the bucket. */
export async function referAntiLeech(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const p = params(request);
  const name = requiredParam(p, 'bucket');
  const settings = parseRefererSettings({
    mode: p.get('mode'),
    norefer: p.get('norefer'),
    pattern: p.get('pattern'),
    sourceEnabled: p.get('source_enabled'),
  });
  const bucket = await call.authorize(name);
  await setReferer(call.g, bucket.name, settings);
  return sendEmpty(reply);
}

/** `POST /corsRules/set/<bucket>` with a JSON array body: the rules checked before the bucket. */
export async function corsRulesSet(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const body = bodyBuffer(request);
  if (!body || body.length === 0) throw Errors.badCorsRules('body: a JSON array of rules is required');
  const { rules, asSent } = parseCorsRulesAsSent(body.toString('utf8'));
  const bucket = await call.authorize(pathParam(request, 'bucket'));
  await setCorsRules(call.g, bucket.name, rules, asSent);
  return sendEmpty(reply);
}

/** `GET|POST /corsRules/get/<bucket>` (the bucket authorised by the auth step). */
export function corsRulesGet(call: Call, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendJson(reply, 200, corsRulesAnswer(call.bucket.settings));
}

/** `POST /accessMode/<bucket>/mode/<0|1>`: the mode checked before the bucket. */
export async function accessMode(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const mode = pathParam(request, 'mode');
  if (mode !== '0' && mode !== '1') throw Errors.badRequest(`accessMode mode must be 0 or 1, got ${JSON.stringify(mode)}`);
  const bucket = await call.authorize(pathParam(request, 'bucket'));
  await setProtected(call.g, bucket.name, mode === '1');
  return sendEmpty(reply);
}
