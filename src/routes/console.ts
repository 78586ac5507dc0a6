/**
 * The console listener's routes: `GET /metrics` (listener level, when the Granary has metrics), the console API
 * (`/api/…`, JSON; src/console/api-*.ts) and the single-page app. Every API route but sign-in needs a session
 * (`console-session`: cookie, Origin, CSRF token for non-GET calls); a bucket named in the path is authorised by
 * the auth step (631 / 403) — move/copy's target bucket by the handler. Root-only calls (key pairs, pipelines)
 * check the session's root flag in the handler (403). IAM calls (`/api/iam/…`) act in the session's own account,
 * or for the root session in the account of `?account=` (console/iam-scope.ts).
 */
import type { Granary } from '../context.js';
import { bindDomainApi, bucketApi, createBucketApi, deleteEventApi, deleteRuleApi, deleteStyleApi, dropBucketApi, listBucketsApi, putSettingApi, putStyleApi, settingOf, unbindDomainApi, updateEventApi, updateRuleApi, addEventApi, addRuleApi } from '../console/api-buckets.js';
import { linkApi, listObjectsApi, opApi, opOf, statApi, uploadTokenApi } from '../console/api-files.js';
import { deleteVersionApi, downloadVersionApi, listVersionsApi, restoreVersionApi } from '../console/api-versions.js';
import { createKeyApi, deleteKeyApi, listKeysApi } from '../console/api-keys.js';
import * as iamGroups from '../console/api-iam-groups.js';
import * as iamPolicies from '../console/api-iam-policies.js';
import * as iamUsers from '../console/api-iam-users.js';
import { historyApi, overviewApi } from '../console/api-overview.js';
import { deleteWorkflowApi, fetchTaskApi, jobApi, listFetchTasksApi, listJobsApi, listPipelinesApi, listWorkflowsApi, putPipelineApi, putWorkflowApi, submitFetchTaskApi, submitJobApi } from '../console/api-processing.js';
import { sessionApi, signInApi, signOutApi } from '../console/api-session.js';
import type { ConsoleApi } from '../console/api-context.js';
import { appPage, unknownApi } from '../console/app-page.js';
import type { ConsoleSession } from '../console/sessions.js';
import { metricsRoute } from '../metrics/route.js';
import type { BucketRule, RouteEntry, RouteIam } from './types.js';
import { rsOpAction } from '../iam/operation-actions.js';

const NONE: BucketRule = { from: 'none' };
const OWNED: BucketRule = { from: 'none' }; // only the session's own buckets (mayAccess) or jobs
const PATH: BucketRule = { from: 'param', name: 'bucket' };
type ConsoleRoute = RouteEntry<ConsoleApi, ConsoleSession>;

/** A session route of the console API. */
function api(method: ConsoleRoute['method'], url: string, name: string, bucket: BucketRule, iam: RouteIam, handler: ConsoleRoute['handler'], precheck?: ConsoleRoute['precheck']): ConsoleRoute {
  return { method, url, role: 'console', operation: `console.${name}`, auth: 'console-session', bucket, iam, group: 'console-api', handler, ...(precheck ? { precheck } : {}) };
}

const SETTINGS: RouteIam = { action: 'kodo/BucketSettings', resource: 'bucket' };
const act = (action: string, resource: 'bucket' | 'object' = 'object'): RouteIam => ({ action, resource });
/** The console's file op (`/ops/:op`: delete, move, copy, chgm…) → its Kodo action, as the rs op of that name. */
const FILE_OP: RouteIam = { action: (request) => rsOpAction((request.params as { op?: string }).op ?? '') ?? 'kodo/Stat', resource: 'object' };

export const CONSOLE_ROUTES: ConsoleRoute[] = [
  { method: 'POST', url: '/api/session', role: 'console', operation: 'console.signIn', auth: 'console-signin', bucket: NONE, iam: 'none', group: 'console-api', handler: signInApi },
  { method: 'GET', url: '/api/session', role: 'console', operation: 'console.session', auth: 'console-session-optional', bucket: NONE, iam: 'none', group: 'console-api', handler: sessionApi },
  api('DELETE', '/api/session', 'signOut', NONE, 'none', signOutApi),
  api('GET', '/api/overview', 'overview', OWNED, 'none', overviewApi),
  api('GET', '/api/history', 'history', OWNED, 'none', historyApi),

  api('GET', '/api/buckets', 'buckets.list', OWNED, 'none', listBucketsApi),
  api('POST', '/api/buckets', 'buckets.create', NONE, 'owner-only', createBucketApi),
  api('DELETE', '/api/buckets/:bucket', 'buckets.drop', PATH, act('kodo/Drop', 'bucket'), dropBucketApi),
  api('GET', '/api/buckets/:bucket', 'buckets.get', PATH, SETTINGS, bucketApi),
  api('PUT', '/api/buckets/:bucket/settings/:setting', 'buckets.setting', PATH, SETTINGS, putSettingApi, (request) => void settingOf(request)),
  api('PUT', '/api/buckets/:bucket/styles/:name', 'buckets.style.put', PATH, SETTINGS, putStyleApi),
  api('DELETE', '/api/buckets/:bucket/styles/:name', 'buckets.style.delete', PATH, SETTINGS, deleteStyleApi),
  api('POST', '/api/buckets/:bucket/domains', 'buckets.domain.bind', PATH, SETTINGS, bindDomainApi),
  api('DELETE', '/api/buckets/:bucket/domains/:domain', 'buckets.domain.unbind', PATH, SETTINGS, unbindDomainApi),
  api('POST', '/api/buckets/:bucket/rules', 'buckets.rule.add', PATH, SETTINGS, addRuleApi),
  api('PUT', '/api/buckets/:bucket/rules/:name', 'buckets.rule.update', PATH, SETTINGS, updateRuleApi),
  api('DELETE', '/api/buckets/:bucket/rules/:name', 'buckets.rule.delete', PATH, SETTINGS, deleteRuleApi),
  api('POST', '/api/buckets/:bucket/events', 'buckets.event.add', PATH, SETTINGS, addEventApi),
  api('PUT', '/api/buckets/:bucket/events/:name', 'buckets.event.update', PATH, SETTINGS, updateEventApi),
  api('DELETE', '/api/buckets/:bucket/events/:name', 'buckets.event.delete', PATH, SETTINGS, deleteEventApi),

  api('GET', '/api/buckets/:bucket/objects', 'files.list', PATH, act('kodo/List', 'bucket'), listObjectsApi),
  api('GET', '/api/buckets/:bucket/stat', 'files.stat', PATH, act('kodo/Stat'), statApi),
  api('POST', '/api/buckets/:bucket/upload-token', 'files.uploadToken', PATH, act('kodo/Upload'), uploadTokenApi),
  api('POST', '/api/buckets/:bucket/link', 'files.link', PATH, act('kodo/Get'), linkApi),
  // move/copy: the target bucket (`toBucket`) is authorised by the handler through `call.authorize`.
  api('POST', '/api/buckets/:bucket/ops/:op', 'files.op', PATH, FILE_OP, opApi, (request) => void opOf(request)),
  // An object's versions (docs/reference/versioning.md): as S3's ListBucketVersions, GetObjectVersion, a copy, DeleteObjectVersion.
  api('GET', '/api/buckets/:bucket/versions', 'versions.list', PATH, act('kodo/List', 'bucket'), listVersionsApi),
  api('GET', '/api/buckets/:bucket/versions/download', 'versions.download', PATH, act('kodo/Get'), downloadVersionApi),
  api('POST', '/api/buckets/:bucket/versions/restore', 'versions.restore', PATH, act('kodo/Copy'), restoreVersionApi),
  api('POST', '/api/buckets/:bucket/versions/delete', 'versions.delete', PATH, act('kodo/Delete'), deleteVersionApi),

  api('GET', '/api/jobs', 'jobs.list', OWNED, 'none', listJobsApi),
  api('GET', '/api/jobs/:id', 'jobs.get', OWNED, 'none', jobApi),
  api('POST', '/api/jobs', 'jobs.submit', { from: 'domain', where: 'JSON body bucket', by: 'submitPfop' }, act('kodo/Pfop'), submitJobApi),
  api('GET', '/api/pipelines', 'pipelines.list', NONE, 'owner-only', listPipelinesApi),
  api('PUT', '/api/pipelines/:name', 'pipelines.put', NONE, 'owner-only', putPipelineApi),
  api('GET', '/api/workflows', 'workflows.list', NONE, 'owner-only', listWorkflowsApi),
  api('PUT', '/api/workflows/:name', 'workflows.put', NONE, 'owner-only', putWorkflowApi),
  api('DELETE', '/api/workflows/:name', 'workflows.delete', NONE, 'owner-only', deleteWorkflowApi),
  api('POST', '/api/fetch-tasks', 'fetchTasks.submit', { from: 'domain', where: 'JSON body bucket', by: 'submitAsyncFetch' }, act('kodo/Fetchfiles'), submitFetchTaskApi),
  api('GET', '/api/fetch-tasks', 'fetchTasks.list', OWNED, 'none', listFetchTasksApi),
  api('GET', '/api/fetch-tasks/:id', 'fetchTasks.get', OWNED, 'none', fetchTaskApi),

  api('GET', '/api/keys', 'keys.list', NONE, 'owner-only', listKeysApi),
  api('POST', '/api/keys', 'keys.create', NONE, 'owner-only', createKeyApi),
  api('DELETE', '/api/keys/:accessKey', 'keys.delete', NONE, 'owner-only', deleteKeyApi),

  api('GET', '/api/iam/users', 'iam.users.list', NONE, 'owner-only', iamUsers.listIamUsersApi),
  api('POST', '/api/iam/users', 'iam.users.create', NONE, 'owner-only', iamUsers.createIamUserApi),
  api('GET', '/api/iam/users/:alias', 'iam.users.get', NONE, 'owner-only', iamUsers.iamUserApi),
  api('PATCH', '/api/iam/users/:alias', 'iam.users.update', NONE, 'owner-only', iamUsers.updateIamUserApi),
  api('DELETE', '/api/iam/users/:alias', 'iam.users.delete', NONE, 'owner-only', iamUsers.deleteIamUserApi),
  api('POST', '/api/iam/users/:alias/keys', 'iam.keys.create', NONE, 'owner-only', iamUsers.createIamKeyApi),
  api('PATCH', '/api/iam/users/:alias/keys/:accessKey', 'iam.keys.update', NONE, 'owner-only', iamUsers.updateIamKeyApi),
  api('DELETE', '/api/iam/users/:alias/keys/:accessKey', 'iam.keys.delete', NONE, 'owner-only', iamUsers.deleteIamKeyApi),
  api('PUT', '/api/iam/users/:alias/groups', 'iam.users.groups', NONE, 'owner-only', iamUsers.setIamUserGroupsApi),
  api('PUT', '/api/iam/users/:alias/policies', 'iam.users.policies', NONE, 'owner-only', iamUsers.setIamUserPoliciesApi),
  api('GET', '/api/iam/groups', 'iam.groups.list', NONE, 'owner-only', iamGroups.listIamGroupsApi),
  api('POST', '/api/iam/groups', 'iam.groups.create', NONE, 'owner-only', iamGroups.createIamGroupApi),
  api('GET', '/api/iam/groups/:alias', 'iam.groups.get', NONE, 'owner-only', iamGroups.iamGroupApi),
  api('PATCH', '/api/iam/groups/:alias', 'iam.groups.update', NONE, 'owner-only', iamGroups.updateIamGroupApi),
  api('DELETE', '/api/iam/groups/:alias', 'iam.groups.delete', NONE, 'owner-only', iamGroups.deleteIamGroupApi),
  api('PUT', '/api/iam/groups/:alias/users', 'iam.groups.users', NONE, 'owner-only', iamGroups.setIamGroupUsersApi),
  api('PUT', '/api/iam/groups/:alias/policies', 'iam.groups.policies', NONE, 'owner-only', iamGroups.setIamGroupPoliciesApi),
  api('GET', '/api/iam/policies', 'iam.policies.list', NONE, 'owner-only', iamPolicies.listIamPoliciesApi),
  api('POST', '/api/iam/policies', 'iam.policies.create', NONE, 'owner-only', iamPolicies.createIamPolicyApi),
  api('GET', '/api/iam/policies/:alias', 'iam.policies.get', NONE, 'owner-only', iamPolicies.iamPolicyApi),
  api('PATCH', '/api/iam/policies/:alias', 'iam.policies.update', NONE, 'owner-only', iamPolicies.updateIamPolicyApi),
  api('DELETE', '/api/iam/policies/:alias', 'iam.policies.delete', NONE, 'owner-only', iamPolicies.deleteIamPolicyApi),
  api('GET', '/api/iam/actions', 'iam.actions', NONE, 'owner-only', iamPolicies.iamActionsApi),
  api('GET', '/api/iam/audits', 'iam.audits', NONE, 'owner-only', iamPolicies.iamAuditsApi),

  { method: 'ALL', url: '/api/*', role: 'console', operation: 'console.unknown', auth: 'none', bucket: NONE, iam: 'none', group: 'console-api', handler: unknownApi },
  { method: 'GET', url: '/*', role: 'console', operation: 'console.app', auth: 'none', bucket: NONE, iam: 'none', group: 'console-app', handler: appPage },
];

/** The console listener's own routes (registered only when the Granary has a metrics registry). */
export const CONSOLE_LISTENER_ROUTES: RouteEntry<Granary, unknown>[] = [
  {
    method: 'GET',
    url: '/metrics',
    role: 'console',
    operation: 'console.metrics',
    auth: 'metrics-token',
    bucket: NONE,
    iam: 'none', group: 'console-listener',
    handler: (call, _request, reply) => (call.g.metrics ? metricsRoute(call.g.metrics, reply) : undefined),
  },
];
