/**
 * The Kodo IAM API's routes on the api role (`/iam/v1/…`, docs/reference/iam.md): the 44 calls of Qiniu's go-sdk
 * `iam/apis`, each signed with a Qiniu management token (`auth.TokenQiniu`; `QBox` accepted too) of the root key or
 * an account key, which acts on its own account's IAM objects only (the signing AccessKey is the namespace). No
 * bucket is authorised here: IAM objects are the account's, not a bucket's. Handlers: src/roles/api/iam/.
 */
import type { Caller } from '../auth/management.js';
import type { Granary } from '../context.js';
import * as audits from '../roles/api/iam/audits.js';
import * as catalog from '../roles/api/iam/catalog.js';
import * as groups from '../roles/api/iam/groups.js';
import * as policies from '../roles/api/iam/policies.js';
import * as users from '../roles/api/iam/users.js';
import type { BucketRule, Method, RouteEntry, RouteHandler } from './types.js';

const NONE: BucketRule = { from: 'none' };

/** One IAM entry: `operation` is `api.iam.<go-sdk method, lower camel case>`. */
const iam = (method: Method, url: string, name: string, handler: RouteHandler<Granary, Caller>): RouteEntry<Granary, Caller> => ({
  method,
  url: `/iam/v1${url}`,
  role: 'api',
  operation: `api.iam.${name}`,
  auth: 'management',
  bucket: NONE,
  iam: 'owner-only',
  group: 'main',
  handler,
});

export const IAM_ROUTES: RouteEntry<Granary, Caller>[] = [
  iam('POST', '/users', 'createUser', users.createUser),
  iam('GET', '/users', 'getUsers', users.getUsers),
  iam('GET', '/users/:alias', 'getUser', users.getUser),
  iam('PATCH', '/users/:alias', 'modifyUser', users.modifyUser),
  iam('DELETE', '/users/:alias', 'deleteUser', users.deleteUser),
  iam('POST', '/users/:alias/keypairs', 'createUserKeypairs', users.createUserKeypairs),
  iam('GET', '/users/:alias/keypairs', 'getUserKeypairs', users.getUserKeypairs),
  iam('DELETE', '/users/:alias/keypairs/:accessKey', 'deleteUserKeypair', users.deleteUserKeypair),
  iam('POST', '/users/:alias/keypairs/:accessKey/enable', 'enableUserKeypair', users.enableUserKeypair),
  iam('POST', '/users/:alias/keypairs/:accessKey/disable', 'disableUserKeypair', users.disableUserKeypair),
  iam('GET', '/users/:alias/groups', 'getUserGroups', groups.getUserGroups),
  iam('POST', '/users/:alias/groups', 'updateUserGroups', groups.updateUserGroups),
  iam('GET', '/users/:alias/policies', 'getUserPolicies', policies.getUserPolicies),
  iam('POST', '/users/:alias/policies', 'updateUserPolicies', policies.updateUserPolicies),
  iam('PATCH', '/users/:alias/policies', 'modifyUserPolicies', policies.modifyUserPolicies),
  iam('DELETE', '/users/:alias/policies', 'deleteUserPolicy', policies.deleteUserPolicy),
  iam('GET', '/users/:alias/services', 'getUserAvailableServices', catalog.getUserAvailableServices),
  iam('GET', '/users/:alias/services/:service/actions/:action/resources', 'getUserServiceActionResources', catalog.getUserServiceActionResources),

  iam('POST', '/groups', 'createGroup', groups.createGroup),
  iam('GET', '/groups', 'getGroups', groups.getGroups),
  iam('GET', '/groups/:alias', 'getGroup', groups.getGroup),
  iam('PATCH', '/groups/:alias', 'modifyGroup', groups.modifyGroup),
  iam('DELETE', '/groups/:alias', 'deleteGroup', groups.deleteGroup),
  iam('GET', '/groups/:alias/users', 'getGroupUsers', groups.getGroupUsers),
  iam('POST', '/groups/:alias/users', 'updateGroupUsers', groups.updateGroupUsers),
  iam('PATCH', '/groups/:alias/users', 'modifyGroupUsers', groups.modifyGroupUsers),
  iam('DELETE', '/groups/:alias/users', 'deleteGroupUsers', groups.deleteGroupUsers),
  iam('GET', '/groups/:alias/policies', 'getGroupPolicies', policies.getGroupPolicies),
  iam('POST', '/groups/:alias/policies', 'updateGroupPolicies', policies.updateGroupPolicies),
  iam('PATCH', '/groups/:alias/policies', 'modifyGroupPolicies', policies.modifyGroupPolicies),
  iam('DELETE', '/groups/:alias/policies', 'deleteGroupPolicies', policies.deleteGroupPolicies),
  iam('GET', '/groups/:alias/services/:service/actions/:action/resources', 'getGroupServiceActionResources', catalog.getGroupServiceActionResources),

  iam('POST', '/policies', 'createPolicy', policies.createPolicy),
  iam('GET', '/policies', 'getPolicies', policies.getPolicies),
  iam('GET', '/policies/:alias', 'getPolicy', policies.getPolicy),
  iam('PATCH', '/policies/:alias', 'modifyPolicy', policies.modifyPolicy),
  iam('DELETE', '/policies/:alias', 'deletePolicy', policies.deletePolicy),
  iam('GET', '/policies/:alias/users', 'getPolicyUsers', policies.getPolicyUsers),
  iam('POST', '/policies/:alias/users', 'updatePolicyUsers', policies.updatePolicyUsers),
  iam('GET', '/policies/:alias/groups', 'getPolicyGroups', policies.getPolicyGroups),
  iam('POST', '/policies/:alias/groups', 'updatePolicyGroups', policies.updatePolicyGroups),

  iam('GET', '/actions', 'getActions', catalog.getActions),
  iam('GET', '/services', 'getServices', catalog.getServices),
  iam('GET', '/audits', 'getAudits', audits.getAudits),
];
