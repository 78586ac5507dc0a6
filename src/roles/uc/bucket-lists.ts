/**
 * Bucket listings with details on the uc role (docs/development/kodo-protocol.md §8.6, "list buckets"), beside `/buckets`:
 * - `GET|POST /v3/buckets?region=<r>&global=<bool>&line=<bool>&shared=<bool>` (Python `BucketManager.list_bucket`,
 *   PHP `BucketManager::listbuckets`) → `[{tbl, zone, region, global, line, private, ctime, perm}]`; the Python
 *   SDK's test looks for its bucket by `tbl`. `ctime` Unix seconds, `perm` 0 (the caller's own bucket).
 * - `GET|POST /v2/bucketInfos?region=<r>&global=<bool>&shared=<bool>&fs=<bool>` (Go
 *   `BucketManager.BucketInfosInRegion`, PHP `BucketManager::bucketInfos`) → `[{name, info}]`, `info` the
 *   `v2/bucketInfo` object (Go `BucketSummary`). `fs` (per-bucket usage) is accepted and adds nothing.
 * Both list the buckets the caller may use, in `region` when one is given; Granary has no global, line or shared
 * buckets, so `global=true` or `line=true` lists none and `shared` changes nothing. Management credential (the route table's
 * auth step).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess, VISIBLE } from '../../auth/authorize.js';
import { bucketInfo } from '../../buckets/buckets.js';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import type { BucketRecord } from '../../ports/meta.js';
import { params, sendJson } from '../../http/wire.js';

type Call = RouteCall<Granary, Caller>;

/** The caller's buckets matching the listing's `region`, `global` and `line` parameters. */
async function listed(call: Call, request: FastifyRequest): Promise<BucketRecord[]> {
  const { g, caller } = call;
  const p = params(request);
  if (p.get('global') === 'true' || p.get('line') === 'true') return [];
  const region = p.get('region') ?? '';
  return (await g.meta.listBuckets()).filter((b) => mayAccess(g, caller.accessKey, b, { action: VISIBLE }) && (region === '' || b.region === region));
}

/** `GET|POST /v3/buckets`: the caller's buckets, v3 shape. */
export async function bucketsV3(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const buckets = await listed(call, request);
  return sendJson(
    reply,
    200,
    buckets.map((b) => ({ tbl: b.name, zone: b.region, region: b.region, global: false, line: false, private: b.private ? 1 : 0, ctime: b.ctime, perm: 0 })),
  );
}

/** `GET|POST /v2/bucketInfos`: the caller's buckets with their info. */
export async function bucketInfos(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  return sendJson(reply, 200, (await listed(call, request)).map((b) => ({ name: b.name, info: bucketInfo(b) })));
}
