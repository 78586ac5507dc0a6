/**
 * Listing routes of the rsf role (docs/development/kodo-protocol.md §8.3, §13.2, §14 item 12): `/list` (one JSON page) and `/v2/list`
 * (one JSON object per line, streamed). GET and POST (the Node SDK POSTs with the parameters in the query);
 * parameters in the query string or a form body; management credential (the route table's auth step); the bucket is
 * authorised by `listObjects`/`streamObjects`.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import { listObjects, streamObjects, type ListLine, type ListParams } from '../../objects/list.js';
import type { RouteCall } from '../../http/route-call.js';
import { params, sendJson } from '../../http/wire.js';
import { toJson } from '../../bigint-json.js';


/** The listing parameters of a request (absent ones empty; `limit` raw). */
function listParams(request: FastifyRequest): ListParams {
  const p = params(request);
  return {
    bucket: p.get('bucket') ?? '',
    prefix: p.get('prefix') ?? '',
    delimiter: p.get('delimiter') ?? '',
    marker: p.get('marker') ?? '',
    limit: p.get('limit'),
    needParts: p.get('needparts') === 'true',
  };
}

/**
 * Content-Type of `/v2/list`: not `application/json`, which the body (one JSON object per line) is not — the PHP
 * SDK decodes every `application/json` answer whole and fails (Http/Response.php); Kodo's spec calls the body a
 * binary data stream, and a Go service that does not set the type answers `text/plain; charset=utf-8`. Each line
 * ends with `\n` (PHP's listFilesv2 drops the last element after splitting on `\n`; Java splits on `\n`; Go
 * decodes a stream of objects).
 */
export const V2_LIST_TYPE = 'text/plain; charset=utf-8';

/** Lines of a `/v2/list` page: `{"item":…,"marker":…,"dir":…}\n` each (putTime exact). */
function linesText(lines: ListLine[]): string {
  let out = '';
  for (const line of lines) out += `${toJson(line)}\n`;
  return out;
}

/**
 * `GET|POST /list?bucket=&prefix=&marker=&limit=&delimiter=[&needparts=true]` →
 * `{"marker":"…","commonPrefixes":[…] (with a delimiter),"items":[…]}`, and `GET|POST /v2/list` (same parameters;
 * `limit` 0/absent = everything) → `text/plain; charset=utf-8` lines `{"item":{…},"marker":"…","dir":""}` /
 * `{"item":null,"marker":"…","dir":"a/x/"}`, streamed page by page with backpressure; a client that goes away
 * stops the reading (handlers `list` and `listV2`). Errors (before any line): 400 bad limit, 401/403 credential, 403 another account's bucket,
 * 631 no such bucket, 640 bad marker.
 */
export async function list(call: RouteCall<Granary, Caller>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const p = listParams(request);
  const r = await listObjects(call.g, call.caller.accessKey, p);
  const body: Record<string, unknown> = { marker: r.marker };
  if (p.delimiter !== '') body.commonPrefixes = r.commonPrefixes;
  body.items = r.items;
  return sendJson(reply, 200, toJson(body));
}

/** `GET|POST /v2/list` (see `list`). */
export async function listV2(call: RouteCall<Granary, Caller>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const pages = await streamObjects(call.g, call.caller.accessKey, listParams(request));
  async function* chunks(): AsyncGenerator<Buffer> {
    for await (const lines of pages) yield Buffer.from(linesText(lines), 'utf8');
  }
  // Byte mode: the stream buffers at most ~one page ahead of the socket (backpressure); fastify destroys it
  // when the client goes away, which ends the page generator. A failure after the first line (headers sent)
  // is logged by fastify and cuts the connection.
  const body = Readable.from(chunks(), { objectMode: false });
  return reply.code(200).header('cache-control', 'no-store').type(V2_LIST_TYPE).send(body);
}
