/**
 * Reading an entry for download (protocol.md §11): expired entries are absent (404), disabled ones are
 * refused (403); private buckets need a valid download token (checked by the route before this).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import type { ObjectRecord } from '../store/meta.js';

/** The live entry `<bucket>:<key>`, or undefined when missing or expired. */
export async function findLiveObject(g: Granary, bucket: string, key: string): Promise<ObjectRecord | undefined> {
  const rec = await g.meta.getObject(bucket, key);
  if (!rec) return undefined;
  if (rec.expireAt !== undefined && rec.expireAt <= nowSeconds(g.clock)) return undefined;
  return rec;
}

/** The entry to download: 404 when missing or expired, 403 when disabled (chstatus 1). */
export async function objectForDownload(g: Granary, bucket: string, key: string): Promise<ObjectRecord> {
  const rec = await findLiveObject(g, bucket, key);
  if (!rec) throw Errors.notFound();
  if (rec.status === 1) throw Errors.objectDisabled();
  return rec;
}

/**
 * Response headers that metadata sets: `x-qn-meta-<name>` → `X-Qn-Meta-<Name>`, and `!<Header>` metadata
 * (set by `changeHeaders`) overriding that response header (e.g. `!Content-Type`).
 */
export function metaHeaders(meta: Record<string, string>): { overrides: Record<string, string>; meta: Record<string, string> } {
  const overrides: Record<string, string> = {};
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(meta)) {
    if (name.startsWith('!')) overrides[name.slice(1).toLowerCase()] = value;
    else out[`x-qn-meta-${name.toLowerCase()}`] = value;
  }
  return { overrides, meta: out };
}
