/**
 * `granary migrate --data-dir`, the configuration half: everything of the embedded store a deployment needs besides
 * the entries, copied through the MetaStore port (so any destination implementation works) and idempotently (a
 * second run finds it all and counts it `unchanged`).
 *
 * - Buckets with every attribute: region, private, ctime, owner (at creation), mirror source and host, nrop, styles
 *   and settings (maxAge, referer, CORS, protection/accessMode, lifecycle rules, event rules). The quota is applied
 *   by `applyQuotas` AFTER the entries: a quota set on a bucket that already held more would refuse their commits.
 * - Bound domains; account key pairs; pipelines (concurrency, creation time); workflow templates (times kept).
 * - Settings rows: the server secrets of list markers and v1 ctx (`list_marker_key`, `ctx_key`, so markers handed
 *   out before the move stay valid) and the root key pair of the data dir (`credentials.json`) as the setting
 *   `root_keys` that cluster nodes share (auth/keys.ts ROOT_KEYS_SETTING). The port has no listing of settings, so the names are the
 *   ones Granary writes; the scrubber's position (`scrub`) names source blobs and is not copied.
 */
import { isDeepStrictEqual } from 'node:util';
import { readStoredKeys, ROOT_KEYS_SETTING } from '../auth/keys.js';
import type { BucketRecord, BucketSettings, MetaStore } from '../ports/meta.js';
import type { MigrationReport, RowCounts } from './report.js';

/** Settings rows copied as they are (server secrets: objects/list.ts, objects/resumable/ctx.ts). */
export const COPIED_SETTINGS = ['list_marker_key', 'ctx_key'] as const;

/** A bucket's settings without the quota (applied after the entries). */
function withoutQuota(s: BucketSettings): BucketSettings {
  const rest = { ...s };
  delete rest.quota;
  return rest;
}

/** Runs one row's copy, counting its outcome and recording a failure without stopping the others. */
async function count(c: RowCounts, r: MigrationReport, what: string, fn: () => Promise<'copied' | 'unchanged'>): Promise<void> {
  try {
    c[await fn()]++;
  } catch (err) {
    c.failed++;
    r.problems.push({ what, reason: (err as Error).message });
  }
}

/** Creates the bucket or brings its attributes in line with the source's (quota aside). */
async function copyBucket(src: BucketRecord, dest: MetaStore): Promise<'copied' | 'unchanged'> {
  const created = await dest.createBucket({ ...src, settings: {} });
  const now = await dest.getBucket(src.name);
  if (!now) throw new Error('the bucket vanished at the destination');
  let changed = created;
  if (now.private !== src.private) changed = (await dest.setBucketPrivate(src.name, src.private)) || changed;
  if (now.source !== src.source || now.sourceHost !== src.sourceHost) {
    const source = src.source === undefined ? undefined : { url: src.source, ...(src.sourceHost !== undefined ? { host: src.sourceHost } : {}) };
    changed = (await dest.setBucketSource(src.name, source)) || changed;
  }
  if ((now.nrop ?? false) !== (src.nrop ?? false)) changed = (await dest.setBucketNrop(src.name, src.nrop ?? false)) || changed;
  if (src.styles && !isDeepStrictEqual(now.styles, src.styles)) {
    const styles = src.styles;
    changed = (await dest.updateBucketStyles(src.name, () => ({ separator: styles.separator, styles: { ...styles.styles } }))) || changed;
  }
  const settings = withoutQuota(src.settings);
  // Without a quota until the entries are in (a quota left by an earlier run is lifted too): applyQuotas.
  if (!isDeepStrictEqual(now.settings, settings)) {
    await dest.updateBucketSettings(src.name, () => settings);
    changed = changed || !isDeepStrictEqual(withoutQuota(now.settings), settings);
  }
  return changed ? 'copied' : 'unchanged';
}

/**
 * Copies buckets, domains, keys, settings rows, pipelines and workflow templates from `src` to `dest`, counting
 * into `r`. `dataDir` is the source data dir (its `credentials.json`). Answers the source buckets.
 */
export async function copyConfiguration(src: MetaStore, dest: MetaStore, dataDir: string, r: MigrationReport): Promise<BucketRecord[]> {
  const buckets = await src.listBuckets();
  for (const b of buckets) await count(r.buckets, r, `bucket ${b.name}`, () => copyBucket(b, dest));

  for (const b of buckets) {
    for (const d of await src.domainsOf(b.name)) {
      await count(r.domains, r, `domain ${d.domain}`, async () => {
        if ((await dest.bucketOfDomain(d.domain)) === b.name) return 'unchanged';
        const bound = await dest.bindDomain(d.domain, b.name, d.ctime);
        if (bound !== 'bound') throw new Error(`cannot bind it to ${b.name} at the destination (${bound})`);
        return 'copied';
      });
    }
  }

  const destKeys = new Map((await dest.listAccessKeys()).map((k) => [k.accessKey, k]));
  for (const k of await src.listAccessKeys()) {
    await count(r.accessKeys, r, `access key ${k.accessKey}`, async () => {
      const there = destKeys.get(k.accessKey);
      if (there && there.secretKey === k.secretKey) return 'unchanged';
      if (there) throw new Error('the destination has this AccessKey with another SecretKey');
      await dest.createAccessKey(k);
      return 'copied';
    });
  }

  for (const name of COPIED_SETTINGS) {
    const value = await src.getSetting(name);
    if (value === undefined) continue;
    await count(r.settings, r, `setting ${name}`, async () => {
      const there = await dest.getSetting(name);
      if (there === value) return 'unchanged';
      await dest.setSetting(name, value);
      return 'copied';
    });
  }
  const root = await readStoredKeys(dataDir);
  if (root) {
    await count(r.settings, r, `setting ${ROOT_KEYS_SETTING} (credentials.json)`, async () => {
      const text = await dest.getSetting(ROOT_KEYS_SETTING);
      if (text !== undefined) {
        const there = JSON.parse(text) as { accessKey?: string; secretKey?: string };
        if (there.accessKey === root.accessKey && there.secretKey === root.secretKey) return 'unchanged';
        throw new Error('the destination has another root key pair');
      }
      await dest.setSetting(ROOT_KEYS_SETTING, JSON.stringify({ accessKey: root.accessKey, secretKey: root.secretKey }));
      return 'copied';
    });
  }

  for (const p of await src.jobs.listPipelines()) {
    await count(r.pipelines, r, `pipeline ${p.name}`, async () => {
      const there = await dest.jobs.getPipeline(p.name);
      if (there && there.concurrency === p.concurrency) return 'unchanged';
      await dest.jobs.putPipeline(p.name, p.concurrency, p.createdMs);
      return 'copied';
    });
  }

  for (const t of await src.workflowTemplates.list()) {
    await count(r.workflowTemplates, r, `workflow template ${t.owner}/${t.name}`, async () => {
      const there = await dest.workflowTemplates.get(t.owner, t.name);
      if (there && isDeepStrictEqual(there, t)) return 'unchanged';
      await dest.workflowTemplates.put(t);
      return 'copied';
    });
  }
  return buckets;
}

/** Sets every source bucket's quota at the destination (after the entries; see the module comment). */
export async function applyQuotas(buckets: BucketRecord[], dest: MetaStore, r: MigrationReport): Promise<void> {
  for (const b of buckets) {
    const quota = b.settings.quota;
    const now = (await dest.getBucket(b.name))?.settings.quota;
    if (isDeepStrictEqual(now, quota)) continue;
    try {
      await dest.updateBucketSettings(b.name, (cur) => {
        const next = withoutQuota(cur);
        return quota ? { ...next, quota } : next;
      });
    } catch (err) {
      r.buckets.failed++;
      r.problems.push({ what: `bucket ${b.name} quota`, reason: (err as Error).message });
    }
  }
}
