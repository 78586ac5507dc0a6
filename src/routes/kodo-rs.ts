/**
 * The rs, rsf, io and api roles' routes (docs/development/kodo-protocol.md §8–§9), and health. Management
 * credential except downloads (public bucket or private URL), prefop status and health (none). Buckets found in
 * an op path, a batch body or a fetch target are authorised by the handler (`call.authorize`, for every bucket
 * the operation touches) or by the named domain function.
 */
import type { Caller } from '../auth/management.js';
import type { Granary } from '../context.js';
import { fetchStatus, submitFetch } from '../roles/api/async-fetch.js';
import { listPipelinesRoute, pfop, prefop, putPipelineRoute } from '../roles/api/pfop.js';
import { deleteTemplate, getTemplate, listTemplates, putTemplate } from '../roles/api/workflow-templates.js';
import { live, ready } from '../roles/health.js';
import { READ_METHODS } from '../http/wire.js';
import { securityHeadersOnSend } from '../roles/io/active-content.js';
import { download } from '../roles/io/download.js';
import { fetch } from '../roles/io/fetch.js';
import { prefetch } from '../roles/io/prefetch.js';
import { batch } from '../roles/rs/batch.js';
import { OP_NAMES } from '../roles/rs/ops.js';
import { rsOp } from '../roles/rs/routes.js';
import { list, listV2 } from '../roles/rsf/list.js';
import type { BucketRule, RouteEntry } from './types.js';
import { RS_OP_ACTIONS } from '../iam/operation-actions.js';

const NONE: BucketRule = { from: 'none' };
const R = READ_METHODS;
const OP_ENTRIES: BucketRule = { from: 'in-handler', where: 'every EncodedEntryURI of the op path (runOp)' };

/** `POST /<op>/*` for every rs op (ops.ts), plus the Node SDK's `GET /stat/*`. */
const RS_OPS = OP_NAMES.map(
  (name): RouteEntry<Granary, Caller> => ({
    method: name === 'stat' ? ['GET', 'POST'] : 'POST',
    url: `/${name}/*`,
    role: 'rs',
    operation: `rs.${name}`,
    auth: 'management',
    bucket: OP_ENTRIES,
    iam: { action: RS_OP_ACTIONS[name]!, resource: 'object' },
    group: 'main',
    handler: rsOp,
  }),
);

export const RS_ROUTES: RouteEntry<Granary, Caller>[] = [
  ...RS_OPS,
  { method: 'POST', url: '/batch', role: 'rs', operation: 'rs.batch', auth: 'management', bucket: { from: 'in-handler', where: 'every entry of every op= of the body (runOp)' }, iam: { each: 'the op name of every op= (iam/operation-actions.ts RS_OP_ACTIONS)', resource: 'object' }, group: 'main', handler: batch },
];

export const RSF_ROUTES: RouteEntry<Granary, Caller>[] = [
  { method: R, url: '/list', role: 'rsf', operation: 'rsf.list', auth: 'management', bucket: { from: 'domain', where: 'query/form bucket', by: 'listObjects' }, iam: { action: 'kodo/List', resource: 'bucket' }, group: 'main', handler: list },
  { method: R, url: '/v2/list', role: 'rsf', operation: 'rsf.list.v2', auth: 'management', bucket: { from: 'domain', where: 'query/form bucket', by: 'streamObjects' }, iam: { action: 'kodo/List', resource: 'bucket' }, group: 'main', handler: listV2 },
];

export const IO_ROUTES: RouteEntry<Granary, Caller>[] = [
  { method: 'POST', url: '/fetch/*', role: 'io', operation: 'io.fetch', auth: 'management', bucket: { from: 'domain', where: 'target EncodedEntryURI in the path', by: 'fetchToEntry' }, iam: { action: 'kodo/Fetchfiles', resource: 'object' }, group: 'main', handler: fetch },
  { method: 'POST', url: '/prefetch/*', role: 'io', operation: 'io.prefetch', auth: 'management', bucket: { from: 'domain', where: 'EncodedEntryURI in the path', by: 'prefetchEntry' }, iam: { action: 'kodo/Prefetch', resource: 'object' }, group: 'main', handler: prefetch },
  // Path style and bound domains (DOMAIN_PREFIX); its own HEAD; every answer gets the security headers.
  {
    method: ['GET', 'HEAD'],
    url: '/*',
    role: 'io',
    operation: 'io.download',
    auth: 'download',
    bucket: { from: 'in-handler', where: 'the URL (public or signed); a saveas target (call.authorizeAs)' },
    iam: { action: 'kodo/Get', resource: 'object' },
    group: 'main',
    handler: download,
    exposeHeadRoute: false,
    onSend: securityHeadersOnSend,
  },
];

export const API_ROUTES: RouteEntry<Granary, Caller>[] = [
  { method: 'POST', url: '/pfop/', role: 'api', operation: 'api.pfop', auth: 'management', bucket: { from: 'domain', where: 'form bucket (and the saveas targets of the fops)', by: 'submitPfop' }, iam: { action: 'kodo/Pfop', resource: 'object' }, group: 'main', handler: pfop },
  { method: 'POST', url: '/pfop', role: 'api', operation: 'api.pfop', auth: 'management', bucket: { from: 'domain', where: 'form bucket (and the saveas targets of the fops)', by: 'submitPfop' }, iam: { action: 'kodo/Pfop', resource: 'object' }, group: 'main', handler: pfop },
  { method: ['GET', 'POST'], url: '/status/get/prefop', role: 'api', operation: 'api.prefop', auth: 'none', bucket: NONE, iam: 'none', group: 'main', handler: prefop },
  { method: 'POST', url: '/pipelines/:name', role: 'api', operation: 'api.pipelines.put', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: putPipelineRoute },
  { method: ['GET', 'POST'], url: '/pipelines', role: 'api', operation: 'api.pipelines.list', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: listPipelinesRoute },
  { method: 'POST', url: '/workflowTemplates/:name', role: 'api', operation: 'api.workflowTemplates.put', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: putTemplate },
  { method: 'GET', url: '/workflowTemplates/:name', role: 'api', operation: 'api.workflowTemplates.get', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: getTemplate },
  { method: 'DELETE', url: '/workflowTemplates/:name', role: 'api', operation: 'api.workflowTemplates.delete', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: deleteTemplate },
  { method: R, url: '/workflowTemplates', role: 'api', operation: 'api.workflowTemplates.list', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: listTemplates },
  { method: 'POST', url: '/sisyphus/fetch', role: 'api', operation: 'api.asyncFetch.submit', auth: 'management', bucket: { from: 'domain', where: 'JSON body bucket', by: 'submitAsyncFetch' }, iam: { action: 'kodo/Fetchfiles', resource: 'object' }, group: 'main', handler: submitFetch },
  { method: 'GET', url: '/sisyphus/fetch', role: 'api', operation: 'api.asyncFetch.status', auth: 'management', bucket: NONE, iam: 'none', group: 'main', handler: fetchStatus },
];

export const HEALTH_ROUTES: RouteEntry<Granary, Caller>[] = [
  { method: ['GET', 'HEAD'], url: '/health/live', role: 'health', operation: 'health.live', auth: 'none', bucket: NONE, iam: 'none', group: 'main', handler: live, exposeHeadRoute: false },
  { method: ['GET', 'HEAD'], url: '/health/ready', role: 'health', operation: 'health.ready', auth: 'none', bucket: NONE, iam: 'none', group: 'main', handler: ready, exposeHeadRoute: false },
];
