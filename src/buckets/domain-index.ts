/**
 * Download-domain → bucket lookup for request routing. Routing is synchronous, so the bound domains are held
 * in memory: reloaded at start, after every bind/drop through this process, and when the store's `domains` change
 * counter moves (ports/reloading.ts): domains bound through another worker process or by the CLI take effect
 * within about half a second.
 */
import { ReloadingView } from '../ports/reloading.js';
import type { MetaStore } from '../ports/meta.js';

export class DomainIndex extends ReloadingView {
  private map = new Map<string, string>();

  constructor(
    private readonly meta: MetaStore,
  ) {
    super(() => meta.changeCount('domains'));
  }

  /** Re-reads every bound domain. */
  async reload(): Promise<void> {
    const next = new Map<string, string>();
    for (const b of await this.meta.listBuckets()) {
      for (const d of await this.meta.domainsOf(b.name)) next.set(d.domain, d.bucket);
    }
    this.map = next;
  }

  /** Bucket bound to a `Host` header value (port and case ignored), if any. */
  bucketOfHost(host: string | undefined): string | undefined {
    if (!host || this.map.size === 0) return undefined;
    const name = host.replace(/:\d+$/, '').toLowerCase().replace(/\.$/, '');
    return this.map.get(name);
  }
}
