/**
 * Download-domain → bucket lookup for request routing. Routing is synchronous, so the bound domains are held
 * in memory: reloaded at start, after every bind/drop through this process, and when the store's `domains` change
 * counter moves (ports/reloading.ts): domains bound through another worker process or by the CLI take effect
 * within about half a second.
 *
 * Besides the bound domains, a host `<bucket>.<GRANARY_SOURCE_DOMAIN>` names its bucket (the bucket's default
 * source domain, Kodo's io-src domain), and `GRANARY_CDN_DOMAINS` says which hosts a CDN serves (where referer
 * anti-leech applies without `source_enabled`, buckets/referer.ts).
 */
import { ReloadingView } from '../ports/reloading.js';
import type { MetaStore } from '../ports/meta.js';

/** The host settings the index reads (src/config.ts: `sourceDomain`, `cdnDomains`). */
export interface DomainHosts {
  sourceDomain?: string;
  cdnDomains?: readonly string[];
}

/** A `Host` header value as compared here: no port, lower case, no trailing dot. */
function hostName(host: string): string {
  return host.replace(/:\d+$/, '').toLowerCase().replace(/\.$/, '');
}

export class DomainIndex extends ReloadingView {
  private map = new Map<string, string>();
  private byBucket = new Map<string, string[]>();

  constructor(
    private readonly meta: MetaStore,
    private readonly hosts: DomainHosts = {},
  ) {
    super(() => meta.changeCount('domains'));
  }

  /** Re-reads every bound domain. */
  async reload(): Promise<void> {
    const next = new Map<string, string>();
    const byBucket = new Map<string, string[]>();
    for (const b of await this.meta.listBuckets()) {
      for (const d of await this.meta.domainsOf(b.name)) {
        next.set(d.domain, d.bucket);
        byBucket.set(d.bucket, [...(byBucket.get(d.bucket) ?? []), d.domain]);
      }
    }
    this.map = next;
    this.byBucket = byBucket;
  }

  /**
   * Bucket a `Host` header value names (port and case ignored): a bound domain's bucket, or `<bucket>` of
   * `<bucket>.<GRANARY_SOURCE_DOMAIN>`; undefined otherwise.
   */
  bucketOfHost(host: string | undefined): string | undefined {
    if (!host) return undefined;
    const source = this.hosts.sourceDomain;
    if (this.map.size === 0 && source === undefined) return undefined;
    const name = hostName(host);
    const bound = this.map.get(name);
    if (bound !== undefined || source === undefined) return bound;
    if (name.length <= source.length + 1 || !name.endsWith(`.${source}`)) return undefined;
    const bucket = name.slice(0, -(source.length + 1));
    return bucket.includes('.') ? undefined : bucket;
  }

  /** Whether `host` is one of GRANARY_CDN_DOMAINS (`*.suffix` matches every subdomain of suffix). */
  isCdnHost(host: string | undefined): boolean {
    const cdn = this.hosts.cdnDomains;
    if (!host || !cdn || cdn.length === 0) return false;
    const name = hostName(host);
    return cdn.some((d) => (d.startsWith('*.') ? name.endsWith(d.slice(1)) && name.length > d.length - 1 : name === d));
  }

  /**
   * The bucket's default source domains (Kodo's `io_src`), host names without port: `<bucket>.<GRANARY_SOURCE_DOMAIN>`
   * when set, then the bucket's bound domains that are not CDN domains, in the order bound. Empty when none.
   */
  sourceDomainsOf(bucket: string): string[] {
    const out = this.hosts.sourceDomain === undefined ? [] : [`${bucket}.${this.hosts.sourceDomain}`];
    for (const d of this.byBucket.get(bucket) ?? []) if (!this.isCdnHost(d)) out.push(d);
    return out;
  }
}
