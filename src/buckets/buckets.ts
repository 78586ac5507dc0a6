/**
 * Bucket operations with Kodo semantics (docs/development/kodo-protocol.md §8.6): create (614 exists, 400 bad name), drop (631
 * missing, 400 not empty), private flag, mirror source (`image`/`unimage`), bucket info, bound domains.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { checkSourceUrl } from '../objects/fetch/source-url.js';
import { nowSeconds } from '../ports/clock.js';
import type { BucketRecord, DomainRecord } from '../ports/meta.js';
import { checkBucketName, normaliseDomain } from './names.js';
import { downloadSettingsInfo } from './settings-info.js';
import { stylesOf } from './styles.js';

/**
 * Creates a bucket owned by the account of `owner` (an AccessKey; `region` defaults to the configured one).
 * 614 when it exists (Kodo's `the bucket already exists and you own it.` when `owner` owns it), 400 for a bad or
 * reserved name.
 */
export async function createBucket(g: Granary, name: string, owner: string, region?: string): Promise<BucketRecord> {
  checkBucketName(name);
  const rec: BucketRecord = {
    name,
    region: region || g.config.region,
    private: false,
    ctime: nowSeconds(g.clock),
    owner,
    settings: {},
  };
  if (!(await g.meta.createBucket(rec))) {
    const existing = await g.meta.getBucket(name);
    throw existing?.owner === owner ? Errors.bucketExistsOwned() : Errors.bucketExists(name);
  }
  return rec;
}

/** Drops an empty bucket and its domain bindings. 631 missing; 400 when it still holds entries. */
export async function dropBucket(g: Granary, name: string): Promise<void> {
  const outcome = await g.meta.dropBucket(name);
  if (outcome === 'missing') throw Errors.noSuchBucket(name);
  if (outcome === 'not-empty') throw Errors.bucketNotEmpty(name);
  await g.domains.reload();
}

/** Sets the private flag (private buckets need signed download URLs). 631 when missing. */
export async function setBucketPrivate(g: Granary, name: string, isPrivate: boolean): Promise<void> {
  if (!(await g.meta.setBucketPrivate(name, isPrivate))) throw Errors.noSuchBucket(name);
}

/**
 * Enables or disables the `nrop` moderation fop for a bucket (docs/development/kodo-protocol.md §10.4; Granary's switch, since Kodo
 * enables it per account in its console). 631 when the bucket is missing.
 */
export async function setBucketNrop(g: Granary, name: string, enabled: boolean): Promise<void> {
  if (!(await g.meta.setBucketNrop(name, enabled))) throw Errors.noSuchBucket(name);
}

/** A Host header value: a DNS name, IPv4 or bracketed IPv6 address, optional port. */
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$/;

/**
 * Sets a bucket's mirror source (docs/development/kodo-protocol.md §8.6 `image`): `url` the origin a missing key is pulled from
 * (`<url>/<key>`), `host` the Host header sent to it (none when undefined or ''). 400 not an absolute http(s)
 * URL or a malformed host; 631 missing bucket. The outbound guard applies when pulling, not here.
 */
export async function setBucketSource(g: Granary, name: string, url: string, host?: string): Promise<void> {
  checkSourceUrl(url);
  if (host && !HOST_HEADER.test(host)) throw Errors.badMirrorHost(JSON.stringify(host));
  if (!(await g.meta.setBucketSource(name, { url, ...(host ? { host } : {}) }))) throw Errors.noSuchBucket(name);
}

/** Clears a bucket's mirror source (docs/development/kodo-protocol.md §8.6 `unimage`); a miss is a plain 404 again. 631 missing bucket. */
export async function clearBucketSource(g: Granary, name: string): Promise<void> {
  if (!(await g.meta.setBucketSource(name, undefined))) throw Errors.noSuchBucket(name);
}

/** Binds a download domain to a bucket. 631 missing bucket; 400 bad or already-bound domain. */
export async function bindDomain(g: Granary, domain: string, bucket: string): Promise<DomainRecord> {
  const d = normaliseDomain(domain);
  const outcome = await g.meta.bindDomain(d, bucket, nowSeconds(g.clock));
  if (outcome === 'no-bucket') throw Errors.noSuchBucket(bucket);
  if (outcome === 'taken') throw Errors.badDomain(`${d} is bound to another bucket`);
  await g.domains.reload();
  return { domain: d, bucket, ctime: nowSeconds(g.clock) };
}

/**
 * `v2/bucketInfo` shape (docs/development/kodo-protocol.md §8.6; Node SDK d.ts): `source`/`host` the mirror source and its Host header
 * ('' when none), `separator` and `styles` the image styles (buckets/styles.ts; default `-` and none); `protected`,
 * `max_age`, `anti_leech_mode`, `refer_wl`, `refer_bl` (each left out when empty), `no_refer`, `source_enabled` the
 * download settings (buckets/settings-info.ts); `no_index_page` 0|1 and `remark` as set; `nrop` (Granary's) whether
 * the `nrop` fop is enabled.
 */
export function bucketInfo(b: BucketRecord): Record<string, unknown> {
  const settings = downloadSettingsInfo(b.settings);
  return {
    source: b.source ?? '',
    host: b.sourceHost ?? '',
    protected: settings.protected,
    private: b.private ? 1 : 0,
    no_index_page: b.settings.noIndexPage === true ? 1 : 0,
    max_age: settings.max_age,
    separator: stylesOf(b).separator,
    styles: stylesOf(b).styles,
    anti_leech_mode: settings.anti_leech_mode,
    token_anti_leech: 0,
    ...(settings.refer_wl ? { refer_wl: settings.refer_wl } : {}),
    ...(settings.refer_bl ? { refer_bl: settings.refer_bl } : {}),
    source_enabled: settings.source_enabled,
    no_refer: settings.no_refer,
    mac_key: '',
    mac_key2: '',
    remark: b.settings.remark ?? '',
    ctime: new Date(b.ctime * 1000).toISOString(),
    region: b.region,
    zone: b.region,
    nrop: b.nrop === true,
  };
}
