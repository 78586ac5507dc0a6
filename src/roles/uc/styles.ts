/**
 * Bucket style routes on the uc role (docs/development/kodo-protocol.md §10.1, §6 bucketInfo `separator`/`styles`); management
 * credential (the route table's auth step, src/routes/kodo-uc.ts), the bucket authorised like every bucket route (403 another account's, 631 missing).
 * - `POST /style/<bucket>/name/<EncodedName>/style/<EncodedStyle>`: set a style (a download-URL fop pipeline);
 * - `POST /unstyle/<bucket>/name/<EncodedName>`: remove it (200 also when it did not exist);
 * - `POST /separator/<bucket>/sep/<EncodedSep>`: set the separators (e.g. `-`, or several: `-_!`).
 * Parameters are URL-safe base64; 200 empty body; 400 for bad base64, names, pipelines or separators.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { removeStyle, setSeparator, setStyle } from '../../buckets/styles.js';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { decodeParam, pathSegments } from '../../objects/manage/encoded-entry.js';
import { rawUrlOf, sendEmpty } from '../../http/wire.js';

/** The bucket and the named `/`-separated parameters after it; 400 unless they are exactly `names`. */
function parts(request: FastifyRequest, names: string[], usage: string): { bucket: string; values: string[] } {
  const [bucket, ...rest] = pathSegments(rawUrlOf(request)).slice(1);
  if (!bucket || rest.length !== names.length * 2 || names.some((n, i) => rest[i * 2] !== n)) {
    throw Errors.badRequest(`expected ${usage}`);
  }
  return { bucket, values: names.map((n, i) => decodeParam(rest[i * 2 + 1], n)) };
}

type Call = RouteCall<Granary, Caller>;

/** `POST /style/*`: the path checked before the bucket. */
export async function style(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { bucket, values } = parts(request, ['name', 'style'], '/style/<bucket>/name/<EncodedName>/style/<EncodedStyle>');
  const b = await call.authorize(bucket);
  await setStyle(g, b.name, values[0] as string, values[1] as string);
  return sendEmpty(reply);
}

/** `POST /unstyle/*`: the path checked before the bucket. */
export async function unstyle(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { bucket, values } = parts(request, ['name'], '/unstyle/<bucket>/name/<EncodedName>');
  const b = await call.authorize(bucket);
  await removeStyle(g, b.name, values[0] as string);
  return sendEmpty(reply);
}

/** `POST /separator/*`: the path checked before the bucket. */
export async function separator(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { bucket, values } = parts(request, ['sep'], '/separator/<bucket>/sep/<EncodedSep>');
  const b = await call.authorize(bucket);
  await setSeparator(g, b.name, values[0] as string);
  return sendEmpty(reply);
}
