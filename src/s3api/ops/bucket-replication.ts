/**
 * PutBucketReplication, GetBucketReplication, DeleteBucketReplication (`PUT|GET|DELETE /<bucket>?replication`;
 * AWS API_PutBucketReplication, ReplicationConfiguration) mapped onto Granary's replication rules
 * (replication/rules.ts; docs/guides/replication.md). As in MinIO, a rule's `Destination/Bucket` is the ARN of a
 * remote target created first for this bucket (`granary replication add` prints it; `granary replication ls`
 * lists them): AWS's ARN names a bucket in AWS, a Granary target names an endpoint and a key pair.
 *
 * Mapped: `Role` (kept, answered), `Rule/ID` (generated when absent), `Priority`, `Status`, `Prefix` (V1) or
 * `Filter/Prefix` (V2), `DeleteMarkerReplication/Status` (and MinIO's `DeleteReplication/Status`: either Enabled
 * replicates deletes), `ExistingObjectReplication/Status` (Enabled: the initial sync runs for a new rule),
 * `Destination/Bucket`, `Destination/StorageClass`. Refused, never dropped (InvalidRequest, 400): tag filters
 * (`Filter/Tag`, `Filter/And`), `SourceSelectionCriteria`, `Destination/Account`, `AccessControlTranslation`,
 * `EncryptionConfiguration`, `ReplicationTime`, `Metrics`, a `Destination/Bucket` that is not a target of this
 * bucket. A body that is not a ReplicationConfiguration with 1 to 100 rules, a Status other than
 * Enabled/Disabled, or two rules with one ID → MalformedXML (400).
 *
 * Put replaces every rule (the rows of rules no longer present are dropped; targets stay). Get without rules →
 * ReplicationConfigurationNotFoundError (404). Delete removes every rule and answers 204.
 */
import { randomBytes } from 'node:crypto';
import type { Granary } from '../../context.js';
import { nowSeconds } from '../../ports/clock.js';
import type { BucketSettings } from '../../ports/meta.js';
import type { ReplicationRule } from '../../ports/replication.js';
import { markExisting, MAX_REPLICATION_RULES } from '../../replication/rules.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, type XmlNode, xmlDocument } from '../xml.js';

type XmlObject = { [name: string]: XmlNode | XmlNode[] | undefined };

/** A child element as an object ('' → {}), or MalformedXML. */
function obj(node: XmlNode | XmlNode[] | undefined): XmlObject {
  if (node === '') return {};
  if (node === undefined || typeof node === 'string' || Array.isArray(node)) throw S3Errors.MalformedXML();
  return node;
}

/** `<X><Status>Enabled|Disabled</Status></X>` → boolean (absent: `dflt`). */
function statusFlag(node: XmlNode | XmlNode[] | undefined, dflt: boolean): boolean {
  if (node === undefined) return dflt;
  const s = textOf(obj(node).Status)?.trim();
  if (s === 'Enabled') return true;
  if (s === 'Disabled') return false;
  throw S3Errors.MalformedXML();
}

const UNSUPPORTED_RULE = ['SourceSelectionCriteria'];
const UNSUPPORTED_DESTINATION = ['Account', 'AccessControlTranslation', 'EncryptionConfiguration', 'ReplicationTime', 'Metrics'];

/** One `<Rule>` as a Granary rule (see the module comment). */
async function ruleOf(g: Granary, bucket: string, node: XmlNode, role: string | undefined, old: ReplicationRule[]): Promise<ReplicationRule> {
  const r = obj(node);
  for (const name of UNSUPPORTED_RULE) if (r[name] !== undefined) throw S3Errors.InvalidRequest(`${name} is not supported by Granary's replication`);
  const id = textOf(r.ID)?.trim() || `rule-${randomBytes(6).toString('base64url')}`;
  if (id.length > 255) throw S3Errors.InvalidRequest('ID must be at most 255 characters');
  const status = textOf(r.Status)?.trim();
  if (status !== 'Enabled' && status !== 'Disabled') throw S3Errors.MalformedXML();
  const priorityText = textOf(r.Priority);
  const priority = priorityText === undefined ? 0 : Number(priorityText);
  if (!Number.isSafeInteger(priority) || priority < 0) throw S3Errors.MalformedXML();
  let prefix = textOf(r.Prefix) ?? '';
  if (r.Filter !== undefined) {
    const f = obj(r.Filter);
    if (f.Tag !== undefined || f.And !== undefined) throw S3Errors.InvalidRequest('replication filters by tag are not supported: filter by Prefix');
    prefix = textOf(f.Prefix) ?? '';
  }
  const dest = obj(r.Destination);
  for (const name of UNSUPPORTED_DESTINATION) {
    if (dest[name] !== undefined) throw S3Errors.InvalidRequest(`Destination/${name} is not supported by Granary's replication`);
  }
  const arn = textOf(dest.Bucket)?.trim();
  if (!arn) throw S3Errors.MalformedXML();
  const target = await g.meta.replication.getTarget(arn);
  if (!target || target.sourceBucket !== bucket) {
    throw S3Errors.InvalidRequest(`Destination/Bucket ${arn} is not a replication target of bucket ${bucket} (create one with granary replication add)`);
  }
  const storageClass = textOf(dest.StorageClass)?.trim();
  const deletes = statusFlag(r.DeleteMarkerReplication, false) || statusFlag(r.DeleteReplication, false);
  const before = old.find((o) => o.id === id);
  return {
    id,
    prefix,
    target: arn,
    deletes,
    existing: statusFlag(r.ExistingObjectReplication, false),
    ...(storageClass ? { storageClass } : {}),
    priority,
    enabled: status === 'Enabled',
    ctime: before?.ctime ?? nowSeconds(g.clock),
    ...(role ? { role } : {}),
  };
}

export async function putBucketReplication(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const doc = obj(parseXml(await readXmlBody(req.body())).ReplicationConfiguration);
  const role = textOf(doc.Role)?.trim();
  const nodes = doc.Rule;
  if (!Array.isArray(nodes) || nodes.length === 0 || nodes.length > MAX_REPLICATION_RULES) throw S3Errors.MalformedXML();
  const old = bucket.settings.replication ?? [];
  const rules: ReplicationRule[] = [];
  for (const n of nodes) rules.push(await ruleOf(g, bucket.name, n, role, old));
  if (new Set(rules.map((r) => r.id)).size !== rules.length) throw S3Errors.InvalidRequest('Rule IDs must be unique');
  await g.meta.updateBucketSettings(bucket.name, (cur) => ({ ...cur, replication: rules }));
  for (const o of old) if (!rules.some((r) => r.id === o.id && r.target === o.target)) await g.meta.replication.dropRule(bucket.name, o.id);
  // The initial sync of rules that are new (or newly enabled with ExistingObjectReplication).
  for (const r of rules) {
    const was = old.find((o) => o.id === r.id && o.target === r.target);
    if (r.enabled && r.existing && !(was?.enabled && was.existing)) await markExisting(g, bucket.name, r);
  }
  return { status: 200 };
}

export async function getBucketReplication(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rules = bucket.settings.replication ?? [];
  if (rules.length === 0) throw S3Errors.ReplicationConfigurationNotFoundError();
  const status = (on: boolean): string => el('Status', on ? 'Enabled' : 'Disabled');
  const body = rules
    .map(
      (r) =>
        `<Rule>${el('ID', r.id)}${el('Priority', r.priority)}${el('Status', r.enabled ? 'Enabled' : 'Disabled')}` +
        `<Filter>${el('Prefix', r.prefix)}</Filter>` +
        `<DeleteMarkerReplication>${status(r.deletes)}</DeleteMarkerReplication>` +
        `<ExistingObjectReplication>${status(r.existing)}</ExistingObjectReplication>` +
        `<Destination>${el('Bucket', r.target)}${el('StorageClass', r.storageClass)}</Destination></Rule>`,
    )
    .join('');
  return xmlResponse(xmlDocument('ReplicationConfiguration', `${el('Role', rules[0]?.role ?? '')}${body}`));
}

export async function deleteBucketReplication(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const old = bucket.settings.replication ?? [];
  await g.meta.updateBucketSettings(bucket.name, (cur) => {
    const next: BucketSettings = { ...cur };
    delete next.replication;
    return next;
  });
  for (const o of old) await g.meta.replication.dropRule(bucket.name, o.id);
  return { status: 204 };
}
