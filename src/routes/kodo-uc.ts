/**
 * The uc role's routes (docs/development/kodo-protocol.md §8.6, §13.2): region query, bucket creation and listing,
 * bucket settings, styles, quota, lifecycle and event rules, tags and remarks. Management credential except the
 * region query (its `ak`/`bucket` are checked by the handler: 612 / 631). Bucket rules: a path or query parameter
 * authorised by the auth step where the route always authorised first; `in-handler` where the route checks its
 * arguments (400) before the bucket (631/403).
 */
import type { Caller } from '../auth/management.js';
import type { Granary } from '../context.js';
import { READ_METHODS } from '../http/wire.js';
import { bucketInfos, bucketsV3 } from '../roles/uc/bucket-lists.js';
import { deleteBucketTagging, getBucketTagging, noIndexPage, putBucketRemark, putBucketTagging } from '../roles/uc/bucket-notes.js';
import { bucketInfoRoute, domainsV2, domainsV3, drop, image, listBuckets, mkbucket, nrop, setPrivate, unimage } from '../roles/uc/buckets.js';
import { addEvents, deleteEvents, getEvents, updateEvents } from '../roles/uc/events.js';
import { addRuleRoute, deleteRuleRoute, getRules, updateRuleRoute } from '../roles/uc/lifecycle-rules.js';
import { queryV1, queryV2, queryV3, queryV4, regions } from '../roles/uc/query.js';
import { getBucketQuota, setBucketQuotaRoute } from '../roles/uc/quota.js';
import { accessMode, corsRulesGet, corsRulesSet, maxAge, referAntiLeech } from '../roles/uc/settings.js';
import { separator, style, unstyle } from '../roles/uc/styles.js';
import type { BucketRule, RouteEntry, RouteIam } from './types.js';

const NONE: BucketRule = { from: 'none' };
const OWNED: BucketRule = { from: 'none' }; // only the caller's own buckets are listed (mayAccess)
const param = (name: string): BucketRule => ({ from: 'param', name });
const query = (name: string): BucketRule => ({ from: 'query', name });
const inHandler = (where: string): BucketRule => ({ from: 'in-handler', where });
const R = READ_METHODS;
/** Bucket settings (domains, CORS, lifecycle and event rules, quota, styles, tags…): one action, read or change. */
const SETTINGS: RouteIam = { action: 'kodo/BucketSettings', resource: 'bucket' };

export const UC_ROUTES: RouteEntry<Granary, Caller>[] = [
  { method: R, url: '/v1/query', role: 'uc', operation: 'uc.query.v1', auth: 'none', bucket: inHandler('query ak and bucket (612/631)'), iam: 'none', group: 'main', handler: queryV1 },
  { method: R, url: '/v2/query', role: 'uc', operation: 'uc.query.v2', auth: 'none', bucket: inHandler('query ak and bucket (612/631)'), iam: 'none', group: 'main', handler: queryV2 },
  { method: R, url: '/v3/query', role: 'uc', operation: 'uc.query.v3', auth: 'none', bucket: inHandler('query ak and bucket (612/631)'), iam: 'none', group: 'main', handler: queryV3 },
  { method: R, url: '/v4/query', role: 'uc', operation: 'uc.query.v4', auth: 'none', bucket: inHandler('query ak and bucket (612/631)'), iam: 'none', group: 'main', handler: queryV4 },
  { method: R, url: '/regions', role: 'uc', operation: 'uc.regions', auth: 'none', bucket: NONE, iam: 'none', group: 'main', handler: regions },

  { method: 'POST', url: '/mkbucketv3/:bucket', role: 'uc', operation: 'uc.mkbucket', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: mkbucket },
  { method: 'POST', url: '/mkbucketv3/:bucket/region/:region', role: 'uc', operation: 'uc.mkbucket', auth: 'management', bucket: NONE, iam: 'owner-only', group: 'main', handler: mkbucket },
  { method: R, url: '/buckets', role: 'uc', operation: 'uc.buckets', auth: 'management', bucket: OWNED, iam: 'none', group: 'main', handler: listBuckets },
  { method: R, url: '/v3/buckets', role: 'uc', operation: 'uc.buckets.v3', auth: 'management', bucket: OWNED, iam: 'none', group: 'main', handler: bucketsV3 },
  { method: R, url: '/v2/bucketInfos', role: 'uc', operation: 'uc.bucketInfos', auth: 'management', bucket: OWNED, iam: 'none', group: 'main', handler: bucketInfos },
  { method: 'POST', url: '/drop/:bucket', role: 'uc', operation: 'uc.drop', auth: 'management', bucket: param('bucket'), iam: { action: 'kodo/Drop', resource: 'bucket' }, group: 'main', handler: drop },
  { method: 'POST', url: '/private', role: 'uc', operation: 'uc.private', auth: 'management', bucket: inHandler('query/form bucket, after the flag'), iam: SETTINGS, group: 'main', handler: setPrivate },
  { method: 'POST', url: '/image/*', role: 'uc', operation: 'uc.image', auth: 'management', bucket: inHandler('path /image/<bucket>/…'), iam: SETTINGS, group: 'main', handler: image },
  { method: 'POST', url: '/unimage/:bucket', role: 'uc', operation: 'uc.unimage', auth: 'management', bucket: param('bucket'), iam: SETTINGS, group: 'main', handler: unimage },
  { method: 'POST', url: '/nrop/:bucket/enable/:flag', role: 'uc', operation: 'uc.nrop', auth: 'management', bucket: inHandler('path :bucket, after the flag'), iam: SETTINGS, group: 'main', handler: nrop },
  { method: R, url: '/v2/bucketInfo', role: 'uc', operation: 'uc.bucketInfo', auth: 'management', bucket: inHandler('query bucket (612 when missing)'), iam: SETTINGS, group: 'main', handler: bucketInfoRoute },
  { method: R, url: '/v2/domains', role: 'uc', operation: 'uc.domains.v2', auth: 'management', bucket: query('tbl'), iam: SETTINGS, group: 'main', handler: domainsV2 },
  { method: R, url: '/v3/domains', role: 'uc', operation: 'uc.domains.v3', auth: 'management', bucket: query('tbl'), iam: SETTINGS, group: 'main', handler: domainsV3 },

  { method: 'POST', url: '/maxAge', role: 'uc', operation: 'uc.maxAge', auth: 'management', bucket: inHandler('query/form bucket, after maxAge'), iam: SETTINGS, group: 'main', handler: maxAge },
  { method: 'POST', url: '/referAntiLeech', role: 'uc', operation: 'uc.referAntiLeech', auth: 'management', bucket: inHandler('query/form bucket, after the settings'), iam: SETTINGS, group: 'main', handler: referAntiLeech },
  { method: 'POST', url: '/corsRules/set/:bucket', role: 'uc', operation: 'uc.corsRules.set', auth: 'management', bucket: inHandler('path :bucket, after the rules'), iam: SETTINGS, group: 'main', handler: corsRulesSet },
  { method: R, url: '/corsRules/get/:bucket', role: 'uc', operation: 'uc.corsRules.get', auth: 'management', bucket: param('bucket'), iam: SETTINGS, group: 'main', handler: corsRulesGet },
  { method: 'POST', url: '/accessMode/:bucket/mode/:mode', role: 'uc', operation: 'uc.accessMode', auth: 'management', bucket: inHandler('path :bucket, after the mode'), iam: SETTINGS, group: 'main', handler: accessMode },

  { method: 'POST', url: '/style/*', role: 'uc', operation: 'uc.style', auth: 'management', bucket: inHandler('path /style/<bucket>/…'), iam: SETTINGS, group: 'main', handler: style },
  { method: 'POST', url: '/unstyle/*', role: 'uc', operation: 'uc.unstyle', auth: 'management', bucket: inHandler('path /unstyle/<bucket>/…'), iam: SETTINGS, group: 'main', handler: unstyle },
  { method: 'POST', url: '/separator/*', role: 'uc', operation: 'uc.separator', auth: 'management', bucket: inHandler('path /separator/<bucket>/…'), iam: SETTINGS, group: 'main', handler: separator },

  { method: 'POST', url: '/setbucketquota/*', role: 'uc', operation: 'uc.quota.set', auth: 'management', bucket: inHandler('path /setbucketquota/<bucket>/…'), iam: SETTINGS, group: 'main', handler: setBucketQuotaRoute },
  { method: R, url: '/getbucketquota/:bucket', role: 'uc', operation: 'uc.quota.get', auth: 'management', bucket: inHandler('path :bucket'), iam: SETTINGS, group: 'main', handler: getBucketQuota },

  { method: 'POST', url: '/rules/add', role: 'uc', operation: 'uc.rules.add', auth: 'management', bucket: query('bucket'), iam: SETTINGS, group: 'main', handler: addRuleRoute },
  { method: 'POST', url: '/rules/update', role: 'uc', operation: 'uc.rules.update', auth: 'management', bucket: query('bucket'), iam: SETTINGS, group: 'main', handler: updateRuleRoute },
  { method: 'POST', url: '/rules/delete', role: 'uc', operation: 'uc.rules.delete', auth: 'management', bucket: query('bucket'), iam: SETTINGS, group: 'main', handler: deleteRuleRoute },
  { method: R, url: '/rules/get', role: 'uc', operation: 'uc.rules.get', auth: 'management', bucket: query('bucket'), iam: SETTINGS, group: 'main', handler: getRules },

  { method: 'POST', url: '/events/add', role: 'uc', operation: 'uc.events.add', auth: 'management', bucket: inHandler('query/form/JSON bucket'), iam: SETTINGS, group: 'main', handler: addEvents },
  { method: 'POST', url: '/events/update', role: 'uc', operation: 'uc.events.update', auth: 'management', bucket: inHandler('query/form/JSON bucket'), iam: SETTINGS, group: 'main', handler: updateEvents },
  { method: 'POST', url: '/events/delete', role: 'uc', operation: 'uc.events.delete', auth: 'management', bucket: inHandler('query/form/JSON bucket'), iam: SETTINGS, group: 'main', handler: deleteEvents },
  { method: R, url: '/events/get', role: 'uc', operation: 'uc.events.get', auth: 'management', bucket: inHandler('query/form/JSON bucket'), iam: SETTINGS, group: 'main', handler: getEvents },

  { method: 'PUT', url: '/bucketTagging', role: 'uc', operation: 'uc.bucketTagging.put', auth: 'management', bucket: inHandler('query bucket, after the tags'), iam: SETTINGS, group: 'main', handler: putBucketTagging },
  { method: 'GET', url: '/bucketTagging', role: 'uc', operation: 'uc.bucketTagging.get', auth: 'management', bucket: query('bucket'), iam: SETTINGS, group: 'main', handler: getBucketTagging },
  { method: 'DELETE', url: '/bucketTagging', role: 'uc', operation: 'uc.bucketTagging.delete', auth: 'management', bucket: query('bucket'), iam: SETTINGS, group: 'main', handler: deleteBucketTagging },
  { method: 'POST', url: '/noIndexPage', role: 'uc', operation: 'uc.noIndexPage', auth: 'management', bucket: inHandler('query/form bucket, after the flag'), iam: SETTINGS, group: 'main', handler: noIndexPage },
  { method: 'PUT', url: '/buckets/:bucket', role: 'uc', operation: 'uc.remark', auth: 'management', bucket: inHandler('path :bucket, after the remark'), iam: SETTINGS, group: 'main', handler: putBucketRemark },
];
