/**
 * `granary migrate <remote>:<bucket>[/<prefix>] <remote>:<bucket>[/<prefix>]`: bucket to bucket across endpoints.
 *
 * The destination is listed once at the start; the source is listed with markers (docs/development/kodo-protocol.md §8.3), the objects
 * of each page that need copying stat'ed by one `/batch` (§8.4, for their metadata), `concurrency` objects at a
 * time. Per object, in order: done in the checkpoint → skipped; already at the destination with the same etag →
 * skipped (recorded); an async fetch task from an earlier run → that task is awaited, not submitted again; else
 * copied:
 * - `fetch`: the destination pulls the object itself (`POST /sisyphus/fetch` on its api host, §8.5) from a
 *   private download URL of the source (§2.5, valid `urlExpiry` seconds), with `etag` (checked before the commit)
 *   and `file_type`; the CLI polls `GET /sisyphus/fetch?id=` (a Granary answers `state`; without one, the
 *   destination's stat is polled), then sets MIME type and `x-qn-meta-*` by chgm and the storage class by chtype
 *   where they differ.
 * - `stream`: the bytes go through this machine (copy.ts).
 * `auto` (the default) tries `fetch` on the first object; when the destination cannot reach the source (guard,
 * network, 478), it says so and streams everything. A later fetch failure streams that object.
 * putTime cannot be set through the Kodo API: copies carry the time they were made (said in the report).
 *
 * After the copy, a verification pass lists the destination and compares every source object's etag (size only
 * for v2 multipart `n…` etags, which a re-upload computes as a plain qetag). Failures (with reasons) go to the
 * report and the checkpoint; the next run retries them.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Checkpoint } from './checkpoint.js';
import type { KodoEntry } from './client.js';
import { streamCopy } from './copy.js';
import { TransferError } from './errors.js';
import { isQetag } from './local-etag.js';
import type { RemoteLocation } from './location.js';
import { forEachLimit } from './pool.js';
import { errorText, type Session } from './session.js';

export type MigrateMode = 'auto' | 'fetch' | 'stream';

export interface MigrateOptions {
  mode: MigrateMode;
  checkpointFile: string;
  fresh: boolean;
  /** Seconds the private download URLs given to the destination stay valid. */
  urlExpiry: number;
  /** Seconds to wait for one async fetch task. */
  fetchTimeout: number;
  verify: boolean;
}

/** Figures of the run beyond the reporter's counts. */
export interface MigrateReport {
  viaFetch: number;
  viaStream: number;
  verified: number;
  mismatched: number;
  mode: MigrateMode;
  checkpoint: string;
  putTimePreserved: false;
}

/** The destination's answer to `GET /sisyphus/fetch?id=` (Granary's fields; Qiniu answers only id and wait). */
interface TaskStatus {
  state?: 'waiting' | 'running' | 'done' | 'failed';
  hash?: string;
  mimeType?: string;
  error?: string;
  code?: number;
}

/** Whether `dst` holds the same content as `src` (etag, or size for v2 multipart etags). */
function sameContent(src: KodoEntry, dst: KodoEntry): boolean {
  if (isQetag(src.hash)) return src.hash === dst.hash;
  return src.fsize === dst.fsize && (src.hash === dst.hash || isQetag(dst.hash));
}

export async function runMigrate(s: Session, src: RemoteLocation, dst: RemoteLocation, o: MigrateOptions): Promise<MigrateReport> {
  const from = await s.client(src.remote);
  const to = await s.client(dst.remote);
  await from.checkBucket(src.bucket);
  await to.checkBucket(dst.bucket);
  const name = (l: RemoteLocation): string => `${l.remote}:${l.bucket}/${l.prefix}`;
  const cp = Checkpoint.open(o.checkpointFile, name(src), name(dst), o.fresh);
  if (cp.resumed > 0) s.reporter.note(`resuming from ${o.checkpointFile} (${cp.resumed} steps recorded)`);
  const dstKeyOf = (key: string): string => `${dst.prefix}${key.slice(src.prefix.length)}`;
  const report: MigrateReport = { viaFetch: 0, viaStream: 0, verified: 0, mismatched: 0, mode: o.mode, checkpoint: o.checkpointFile, putTimePreserved: false };
  const sources = new Map<string, { hash: string; fsize: number }>();

  let mode: 'fetch' | 'stream' | undefined = o.mode === 'auto' ? undefined : o.mode;
  let probe: Promise<void> | undefined;

  /**
   * Waits for task `id` on the destination; answers the stored etag. Polls (the API has no other way): first
   * after 25 ms plus 5 ms per task queued ahead of it (at most 2 s), then every 100 ms growing ×1.5 to 1 s.
   */
  const awaitTask = async (id: string, dstKey: string, entry: KodoEntry, ahead = 0): Promise<{ hash: string; mimeType?: string }> => {
    const deadline = Date.now() + o.fetchTimeout * 1000;
    await delay(Math.min(2000, 25 + 5 * ahead));
    for (let pause = 100; ; pause = Math.min(1000, pause * 1.5)) {
      const r = await to.request(dst.bucket, 'api', 'GET', `/sisyphus/fetch?id=${encodeURIComponent(id)}`);
      if (r.status === 612) throw new TransferError(`fetch task ${id} is unknown at the destination`);
      if (r.status === 200) {
        const st = JSON.parse(r.text) as TaskStatus;
        if (st.state === 'done') {
          if (st.hash) return { hash: st.hash, ...(st.mimeType ? { mimeType: st.mimeType } : {}) };
          return { hash: (await to.stat(dst.bucket, dstKey))?.hash ?? '' };
        }
        if (st.state === 'failed') throw new TransferError(`destination fetch failed: ${st.error ?? 'unknown error'}${st.code ? ` (${st.code})` : ''}`, st.code);
        if (st.state === undefined) {
          const d = await to.stat(dst.bucket, dstKey);
          if (d && sameContent(entry, d)) return { hash: d.hash, mimeType: d.mimeType };
        }
      }
      if (Date.now() > deadline) throw new TransferError(`fetch task ${id} did not finish within ${o.fetchTimeout} s`);
      await delay(pause);
    }
  };

  /**
   * Sets MIME type, metadata and storage class on the destination where the fetch did not keep them (no stat
   * needed when the task answered the source's MIME type and there is neither metadata nor a storage class).
   */
  const fixAttributes = async (dstKey: string, entry: KodoEntry, fetched: { mimeType?: string }): Promise<void> => {
    const meta = entry['x-qn-meta'] ?? {};
    if (fetched.mimeType === entry.mimeType && Object.keys(meta).length === 0 && !entry.type) return;
    const d = await to.stat(dst.bucket, dstKey);
    if (!d) throw new TransferError(`${dstKey} is missing at the destination after the fetch`);
    const have = d['x-qn-meta'] ?? {};
    const metaDiffers = Object.entries(meta).some(([k, v]) => have[k] !== v);
    if (d.mimeType !== entry.mimeType || metaDiffers) await to.chgm(dst.bucket, dstKey, entry.mimeType, meta);
    if ((d.type ?? 0) !== (entry.type ?? 0)) await to.chtype(dst.bucket, dstKey, entry.type ?? 0);
  };

  const viaFetch = async (entry: KodoEntry, dstKey: string, replacing: boolean): Promise<string> => {
    const url = await from.downloadUrl(src.bucket, entry.key, o.urlExpiry, s.opts.domain);
    const body: Record<string, unknown> = { url, bucket: dst.bucket, key: dstKey };
    if (isQetag(entry.hash)) body.etag = entry.hash;
    if (entry.type) body.file_type = entry.type;
    // A key the destination lacks: a task submitted twice (a kill between the submission and its checkpoint line)
    // stores it once — the second finds the key and ends `ignored` (Granary also commits it insert-only).
    if (!replacing) body.ignore_same_key = true;
    const answer = await to.call<{ id: string; wait?: number }>(dst.bucket, 'api', 'POST', '/sisyphus/fetch', { body: JSON.stringify(body), contentType: 'application/json' });
    cp.task(entry.key, answer.id);
    const done = await awaitTask(answer.id, dstKey, entry, Math.max(0, answer.wait ?? 0));
    await fixAttributes(dstKey, entry, done);
    return done.hash;
  };

  const viaStream = async (entry: KodoEntry, dstKey: string): Promise<string> => {
    const r = await streamCopy(from, src.bucket, entry, to, dst.bucket, dstKey, {
      ...(s.opts.limiter ? { limiter: s.opts.limiter } : {}),
      ...(s.opts.domain ? { domain: s.opts.domain } : {}),
      onBytes: (n) => s.reporter.bytes(n),
    });
    return r.hash;
  };

  /** Copies by fetch or stream per the mode (probing in auto mode); answers how and the stored etag. */
  const copy = async (entry: KodoEntry, dstKey: string, replacing: boolean): Promise<{ via: 'fetch' | 'stream'; hash: string }> => {
    if (mode === undefined && probe === undefined) {
      let release!: () => void;
      probe = new Promise((r) => (release = r));
      try {
        const hash = await viaFetch(entry, dstKey, replacing);
        mode = 'fetch';
        s.reporter.note('the destination fetches from the source (server-side async fetch)');
        return { via: 'fetch', hash };
      } catch (err) {
        mode = 'stream';
        s.reporter.note(`the destination cannot fetch from the source (${errorText(err)}); streaming through this machine`);
      } finally {
        release();
      }
      return { via: 'stream', hash: await viaStream(entry, dstKey) };
    }
    if (mode === undefined) await probe;
    if (mode === 'fetch') {
      try {
        return { via: 'fetch', hash: await viaFetch(entry, dstKey, replacing) };
      } catch (err) {
        if (o.mode === 'fetch') throw err;
        s.reporter.note(`${entry.key}: fetch failed (${errorText(err)}); streaming it`);
      }
    }
    return { via: 'stream', hash: await viaStream(entry, dstKey) };
  };

  // What the destination holds now (one listing instead of a stat per key).
  const present = new Map<string, KodoEntry>();
  for await (const d of to.list(dst.bucket, dst.prefix)) present.set(d.key, d);

  /** One source object: `listed` carries its full stat (metadata) when it is to be copied. */
  const one = async (listed: KodoEntry): Promise<void> => {
    const key = listed.key;
    const dstKey = dstKeyOf(key);
    const st = cp.state(key);
    if (st.done !== undefined && st.done === listed.hash) {
      s.reporter.bytes(listed.fsize);
      s.reporter.done({ key, action: 'skipped', bytes: 0, reason: 'checkpoint' });
      return;
    }
    try {
      const existing = present.get(dstKey);
      if (existing && sameContent(listed, existing)) {
        cp.done(key, existing.hash, 'exists');
        s.reporter.bytes(listed.fsize);
        s.reporter.done({ key, action: 'skipped', bytes: 0, reason: 'already at the destination' });
        return;
      }
      const entry = listed;
      if (st.task) {
        try {
          const done = await awaitTask(st.task, dstKey, entry);
          await fixAttributes(dstKey, entry, done);
          cp.done(key, done.hash, 'fetch');
          report.viaFetch++;
          s.reporter.bytes(listed.fsize);
          s.reporter.done({ key, action: 'copied', bytes: listed.fsize, via: 'fetch' });
          return;
        } catch (err) {
          s.reporter.note(`${key}: earlier fetch task ${st.task} did not complete (${errorText(err)}); copying again`);
        }
      }
      if (s.opts.dryRun) {
        s.reporter.done({ key, action: 'would-copy', bytes: listed.fsize, reason: existing ? 'etag' : 'new' });
        return;
      }
      const r = await copy(entry, dstKey, existing !== undefined);
      if (r.via === 'fetch') {
        report.viaFetch++;
        s.reporter.bytes(listed.fsize);
      } else report.viaStream++;
      cp.done(key, r.hash, r.via);
      s.reporter.done({ key, action: 'copied', bytes: listed.fsize, via: r.via });
    } catch (err) {
      cp.failed(key, errorText(err));
      s.reporter.done({ key, action: 'failed', bytes: 0, error: errorText(err) });
    }
  };

  /** The source, page by page: admitted keys; those to copy get their full stat (metadata) by one batch per page. */
  const filtered = async function* (): AsyncGenerator<KodoEntry> {
    for await (const page of from.pages(src.bucket, src.prefix)) {
      const admitted = page.filter((e) => s.opts.filter.admits(e.key.slice(src.prefix.length)));
      for (const e of admitted) {
        sources.set(e.key, { hash: e.hash, fsize: e.fsize });
        s.reporter.addTotal(1, e.fsize);
      }
      const pending = admitted.filter((e) => {
        const st = cp.state(e.key);
        const d = present.get(dstKeyOf(e.key));
        return !(st.done !== undefined && st.done === e.hash) && !(d && sameContent(e, d)) && e['x-qn-meta'] === undefined;
      });
      const stats = await from.statMany(src.bucket, pending.map((e) => e.key));
      for (const e of admitted) yield stats.get(e.key) ?? e;
    }
  };
  await forEachLimit(filtered(), s.opts.concurrency, one);

  if (o.verify && !s.opts.dryRun) {
    const seen = new Map<string, KodoEntry>();
    for await (const d of to.list(dst.bucket, dst.prefix)) seen.set(d.key, d);
    for (const [key, e] of sources) {
      const d = seen.get(dstKeyOf(key));
      if (d && sameContent({ key, ...e, mimeType: '', putTime: 0, type: 0 }, d)) report.verified++;
      else {
        report.mismatched++;
        const why = d ? `verification: etag ${d.hash} at the destination, ${e.hash} at the source` : 'verification: missing at the destination';
        cp.failed(key, why);
        s.reporter.done({ key, action: 'failed', bytes: 0, error: why });
      }
    }
  }
  return report;
}
