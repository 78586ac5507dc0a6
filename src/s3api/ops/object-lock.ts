/**
 * S3 Object Lock operations (docs/reference/versioning.md "Object lock"; AWS API reference
 * PutObjectLockConfiguration, GetObjectLockConfiguration, PutObjectRetention, GetObjectRetention,
 * PutObjectLegalHold, GetObjectLegalHold):
 *
 * - `GET|PUT /<bucket>?object-lock`: `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>
 *   [<Rule><DefaultRetention><Mode>GOVERNANCE|COMPLIANCE</Mode><Days>n</Days>|<Years>n</Years></DefaultRetention>
 *   </Rule>]</ObjectLockConfiguration>`. Put on a bucket created without object lock → InvalidBucketState (409);
 *   a document that is not such a configuration (ObjectLockEnabled other than Enabled, Days and Years both or
 *   neither, an unknown mode) → MalformedXML; a period ≤ 0 → InvalidRetentionPeriod. Get on a bucket without →
 *   ObjectLockConfigurationNotFoundError (404).
 * - `GET|PUT /<bucket>/<key>?retention[&versionId=]`: `<Retention><Mode/><RetainUntilDate/></Retention>` of a
 *   version (the current one without versionId). A date not in the future → InvalidArgument; changing retention
 *   in force other than by extending it (a shorter date, a removal, another mode) → AccessDenied naming the date, unless GOVERNANCE
 *   and `x-amz-bypass-governance-retention: true` from a caller allowed `s3:BypassGovernanceRetention`
 *   (objects/retention.ts). Get of a version without retention → NoSuchObjectLockConfiguration (404).
 * - `GET|PUT /<bucket>/<key>?legal-hold[&versionId=]`: `<LegalHold><Status>ON|OFF</Status></LegalHold>`; anyone
 *   allowed `s3:PutObjectLegalHold` may set or clear it. Get of a version whose hold was never set →
 *   NoSuchObjectLockConfiguration.
 *
 * Object operations on a bucket without object lock → InvalidRequest ("Bucket is missing Object Lock
 * Configuration"); a version id the key lacks → NoSuchVersion (NoSuchKey without one); a delete marker →
 * MethodNotAllowed (405). On a metadata store that keeps no versions (PostgreSQL today) every one of them is
 * NotImplemented (501).
 */
import { objectLockOf, setDefaultRetention } from '../../buckets/object-lock.js';
import type { Granary } from '../../context.js';
import { assertRetentionChange } from '../../objects/retention.js';
import type { BucketRecord, ObjectRecord } from '../../ports/meta.js';
import { isLockMode, type DefaultRetention, type ObjectLock } from '../../ports/object-lock.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { retainUntilOf } from '../object-lock.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { versionHeader, versionIdOf } from '../versions.js';
import { el, isoTime, parseXml, readXmlBody, textOf, xmlDocument, type XmlNode } from '../xml.js';

type Doc = Record<string, XmlNode | XmlNode[] | undefined>;

/** The element `name` of a parsed document as an object (MalformedXML when it is absent, repeated or text). */
function rootOf(text: string, name: string): Doc {
  const root = parseXml(text)[name];
  if (root === undefined || Array.isArray(root)) throw S3Errors.MalformedXML();
  if (typeof root === 'string') {
    if (root.trim() !== '') throw S3Errors.MalformedXML();
    return {};
  }
  return root as Doc;
}

/** The trimmed text of a child (undefined when absent; MalformedXML when repeated or not text). */
function childText(doc: Doc, name: string): string | undefined {
  const node = doc[name];
  if (node === undefined) return undefined;
  if (Array.isArray(node)) throw S3Errors.MalformedXML();
  const text = textOf(node);
  if (text === undefined) throw S3Errors.MalformedXML();
  return text.trim();
}

/**
 * A period of the default retention: a whole number ≥ 1 (InvalidRetentionPeriod ≤ 0, as radosgw answers and Ceph's
 * s3-tests expect; MalformedXML when not a number).
 */
function periodOf(text: string): number {
  if (!/^-?\d+$/.test(text)) throw S3Errors.MalformedXML();
  const n = Number(text);
  if (n <= 0) throw S3Errors.InvalidRetentionPeriod('Default retention period must be a positive integer value.');
  return n;
}

/** An `<ObjectLockConfiguration>` document → its default retention (undefined: none). MalformedXML otherwise. */
export function parseLockConfiguration(text: string): DefaultRetention | undefined {
  const doc = rootOf(text, 'ObjectLockConfiguration');
  if (childText(doc, 'ObjectLockEnabled') !== 'Enabled') throw S3Errors.MalformedXML();
  // The parser reads `Rule` as a list (lifecycle documents repeat it): one is allowed here.
  const rules = doc.Rule;
  if (rules === undefined) return undefined;
  if (Array.isArray(rules) && rules.length !== 1) throw S3Errors.MalformedXML();
  const ruleNode = Array.isArray(rules) ? rules[0] : rules;
  if (Array.isArray(ruleNode) || typeof ruleNode === 'string') throw S3Errors.MalformedXML();
  const ret = (ruleNode as Doc).DefaultRetention;
  if (ret === undefined || Array.isArray(ret) || typeof ret === 'string') throw S3Errors.MalformedXML();
  const d = ret as Doc;
  const mode = childText(d, 'Mode');
  if (mode === undefined || !isLockMode(mode)) throw S3Errors.MalformedXML();
  const days = childText(d, 'Days');
  const years = childText(d, 'Years');
  if ((days === undefined) === (years === undefined)) throw S3Errors.MalformedXML();
  return days !== undefined ? { mode, days: periodOf(days) } : { mode, years: periodOf(years!) };
}

/** NotImplemented on a metadata store that keeps no versions (PostgreSQL today): no object lock there yet. */
function needsVersions(g: Granary): void {
  if (!g.meta.keepsVersions) throw S3Errors.NotImplemented('Object Lock needs the embedded (SQLite) metadata store.');
}

export async function getObjectLockConfiguration(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  needsVersions(g);
  const conf = objectLockOf(await accessBucket(g, req));
  if (!conf) throw S3Errors.ObjectLockConfigurationNotFoundError();
  const rule = conf.rule;
  const ruleXml = rule ? `<Rule><DefaultRetention>${el('Mode', rule.mode)}${el('Days', rule.days)}${el('Years', rule.years)}</DefaultRetention></Rule>` : '';
  return xmlResponse(xmlDocument('ObjectLockConfiguration', el('ObjectLockEnabled', 'Enabled') + ruleXml));
}

export async function putObjectLockConfiguration(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  needsVersions(g);
  const bucket = await accessBucket(g, req);
  const rule = parseLockConfiguration(await readXmlBody(req.body()));
  const out = await setDefaultRetention(g, bucket.name, rule);
  if (out === 'no-bucket') throw S3Errors.NoSuchBucket();
  if (out === 'not-locked') throw S3Errors.InvalidBucketState('Object Lock configuration cannot be enabled on existing buckets');
  return { status: 200 };
}

/** The bucket (with object lock: InvalidRequest otherwise) and the version the request names. */
async function lockedVersion(g: Granary, req: S3Request): Promise<{ bucket: BucketRecord; rec: ObjectRecord; versionId: string | undefined }> {
  signedCaller(req);
  needsVersions(g);
  const bucket = await accessBucket(g, req);
  if (!objectLockOf(bucket)) throw S3Errors.InvalidRequest('Bucket is missing Object Lock Configuration');
  const versionId = versionIdOf(req);
  const v = await g.meta.getVersion(bucket.name, objectKey(req), versionId);
  if (!v) throw versionId !== undefined ? S3Errors.NoSuchVersion() : S3Errors.NoSuchKey();
  if (v.deleteMarker) throw S3Errors.MethodNotAllowed('The specified method is not allowed against a delete marker.', { 'x-amz-delete-marker': 'true' });
  return { bucket, rec: v.record, versionId };
}

/** Writes the new lock of the version through the store (its check inside the transaction), answering 200. */
async function changeLock(g: Granary, req: S3Request, change: (rec: ObjectRecord) => ObjectLock | undefined): Promise<S3Response> {
  const { bucket, rec, versionId } = await lockedVersion(g, req);
  if (!g.meta.setVersionLock) throw S3Errors.NotImplemented('Object Lock needs the embedded (SQLite) metadata store.');
  const out = await g.meta.setVersionLock(bucket.name, rec.key, versionId, change);
  if (out.result === 'no-version') throw versionId !== undefined ? S3Errors.NoSuchVersion() : S3Errors.NoSuchKey();
  if (out.result === 'delete-marker') throw S3Errors.MethodNotAllowed('The specified method is not allowed against a delete marker.');
  return { status: 200, headers: versionHeader(bucket, rec, versionId !== undefined) };
}

/** A lock without empty fields (undefined when nothing is left). */
function compact(lock: ObjectLock): ObjectLock | undefined {
  const out: ObjectLock = {};
  if (lock.mode !== undefined && lock.retainUntil !== undefined) {
    out.mode = lock.mode;
    out.retainUntil = lock.retainUntil;
  }
  // OFF is kept once set (GetObjectLegalHold answers it); only ON protects.
  if (lock.legalHold !== undefined) out.legalHold = lock.legalHold;
  return Object.keys(out).length ? out : undefined;
}

export async function getObjectRetention(g: Granary, req: S3Request): Promise<S3Response> {
  const { bucket, rec, versionId } = await lockedVersion(g, req);
  const lock = rec.lock;
  if (!lock?.mode || lock.retainUntil === undefined) throw S3Errors.NoSuchObjectLockConfiguration();
  return xmlResponse(xmlDocument('Retention', el('Mode', lock.mode) + el('RetainUntilDate', isoTime(lock.retainUntil))), 200, versionHeader(bucket, rec, versionId !== undefined));
}

export async function putObjectRetention(g: Granary, req: S3Request): Promise<S3Response> {
  const doc = rootOf(await readXmlBody(req.body()), 'Retention');
  const mode = childText(doc, 'Mode');
  const date = childText(doc, 'RetainUntilDate');
  if (mode !== undefined && !isLockMode(mode)) throw S3Errors.MalformedXML();
  if ((mode === undefined) !== (date === undefined)) throw S3Errors.MalformedXML();
  const nowMs = g.clock.nowMs();
  const asked: ObjectLock = mode !== undefined && date !== undefined ? { mode, retainUntil: retainUntilOf(date, nowMs) } : {};
  const caller = { bypassGovernance: req.bypassGovernance === true };
  return changeLock(g, req, (rec) => {
    // The one retention rule (objects/retention.ts), on the version as the transaction reads it.
    assertRetentionChange(rec, asked, g.clock.nowMs(), caller);
    return compact({ ...asked, ...(rec.lock?.legalHold !== undefined ? { legalHold: rec.lock.legalHold } : {}) });
  });
}

export async function getObjectLegalHold(g: Granary, req: S3Request): Promise<S3Response> {
  const { bucket, rec, versionId } = await lockedVersion(g, req);
  if (rec.lock?.legalHold === undefined) throw S3Errors.NoSuchObjectLockConfiguration();
  return xmlResponse(xmlDocument('LegalHold', el('Status', rec.lock?.legalHold ? 'ON' : 'OFF')), 200, versionHeader(bucket, rec, versionId !== undefined));
}

export async function putObjectLegalHold(g: Granary, req: S3Request): Promise<S3Response> {
  const doc = rootOf(await readXmlBody(req.body()), 'LegalHold');
  const status = childText(doc, 'Status');
  if (status !== 'ON' && status !== 'OFF') throw S3Errors.MalformedXML();
  return changeLock(g, req, (rec) => compact({ ...rec.lock, legalHold: status === 'ON' }));
}
