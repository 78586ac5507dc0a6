/**
 * Server secrets for the opaque tokens Granary hands out (list markers, v1 ctx): 32 random bytes per name, kept
 * in the MetaStore settings so tokens stay valid across restarts, created on first use.
 */
import { randomBytes } from 'node:crypto';
import type { MetaStore } from '../ports/meta.js';

const cache = new WeakMap<MetaStore, Map<string, Promise<Buffer>>>();

/** The secret called `name` of this store (read from the settings, or created and stored). */
export function serverSecret(meta: MetaStore, name: string): Promise<Buffer> {
  let byName = cache.get(meta);
  if (!byName) cache.set(meta, (byName = new Map()));
  let p = byName.get(name);
  if (!p) {
    p = (async () => {
      const stored = await meta.getSetting(name);
      if (stored) return Buffer.from(stored, 'base64');
      const fresh = randomBytes(32);
      await meta.setSetting(name, fresh.toString('base64'));
      return fresh;
    })();
    byName.set(name, p);
    p.catch(() => byName.delete(name));
  }
  return p;
}
