/**
 * Versions from the command line (docs/reference/versioning.md, docs/reference/cli.md "Versions"), in the two forms
 * of the entry commands (cli/entries.ts): offline on the data dir (root rights), or on a remote through its S3
 * listener (`granary remote add … --s3-host h:p`; AWS SDK v3, path style, SigV4 with the remote's S3 region):
 * - `ls <bucket> --versions` / `ls <remote>:<bucket>[/<prefix>] --versions`: every version and delete marker, in
 *   key order, each key's newest first — `key TAB versionId TAB size TAB putTime (100-ns units) TAB state`, state
 *   `current`, `noncurrent`, `current-delete-marker` or `delete-marker`; common prefixes on their own lines
 *   (--delimiter); `--json` (remote) one object a line. Streams page by page (MetaStore.listVersions /
 *   ListObjectVersions), never every version at once.
 * - `restore <bucket>:<key> --version-id <id>` / `restore <remote>:<bucket>/<key> --version-id <id>`: copies that
 *   version onto its key as a new current version (S3's restore; the versions in between are kept).
 * - `bucket versioning <bucket> [enable|suspend]` / `bucket versioning <remote>:<bucket> [enable|suspend]`: sets or
 *   (without a state) prints the bucket's versioning: Enabled, Suspended, or Off (never versioned).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { Command } from 'commander';
import type { Granary } from '../context.js';
import { offline, withDataDir, type Opts } from './context.js';
import { checkRemoteNames, isRemoteArg, remoteNames, type RemoteOpts } from './remote-args.js';
import type { RemoteLocation } from '../transfer/location.js';

/** One version as printed. */
export interface VersionLine {
  key: string;
  versionId: string;
  size: number;
  /** 100-ns units since the Unix epoch. */
  putTime: bigint | number;
  current: boolean;
  deleteMarker: boolean;
}

/** The text line of a version (see the module comment). */
export function versionLine(v: VersionLine): string {
  const state = v.deleteMarker ? (v.current ? 'current-delete-marker' : 'delete-marker') : v.current ? 'current' : 'noncurrent';
  return `${v.key}\t${v.versionId}\t${v.size}\t${String(v.putTime)}\t${state}\n`;
}

/** Versions listed per page. */
const PAGE = 1000;

/** `ls <bucket> --versions` on the data dir: writes every version under `prefix`, page by page. */
export async function localLsVersions(g: Granary, bucket: string, prefix: string, delimiter: string): Promise<void> {
  const [{ wireVersionId }, { Errors }] = await Promise.all([import('../ports/versions.js'), import('../errors.js')]);
  if (!(await g.meta.getBucket(bucket))) throw Errors.noSuchBucket(bucket);
  let after: { key: string; versionId?: string; isPrefix?: boolean } | undefined;
  for (;;) {
    const page = await g.meta.listVersions({ bucket, prefix, delimiter, ...(after ? { after } : {}), limit: PAGE });
    let out = '';
    for (const e of page.entries) {
      if (e.kind === 'prefix') {
        out += `${e.prefix}\n`;
        after = { key: e.prefix, isPrefix: true };
        continue;
      }
      const { record, deleteMarker, isLatest } = e.version;
      const versionId = wireVersionId(record);
      out += versionLine({ key: record.key, versionId, size: deleteMarker ? 0 : record.fsize, putTime: record.putTime, current: isLatest, deleteMarker });
      after = { key: record.key, versionId };
    }
    process.stdout.write(out);
    if (!page.more) return;
  }
}

/** `restore <bucket>:<key> --version-id <id>` on the data dir; answers the new current version's id. */
export async function localRestore(g: Granary, bucket: string, key: string, versionId: string): Promise<string> {
  const [{ copyEntry }, { isVersionId }] = await Promise.all([import('../objects/manage/copy.js'), import('../ports/versions.js')]);
  if (!isVersionId(versionId)) throw new Error(`--version-id ${JSON.stringify(versionId)} is not a version id`);
  const out = await copyEntry(g, { bucket, key, versionId }, { bucket, key }, true);
  return out.versionId ?? 'null';
}

/** An S3 client of the remote's S3 listener; an error naming `--s3-host` when the remote has none. */
export async function remoteS3(remote: string): Promise<S3Client> {
  const [{ RemoteStore }, { S3Client }, { s3RegionOf, DEFAULT_AWS_REGION }, { TransferError }] = await Promise.all([
    import('../transfer/remotes.js'),
    import('@aws-sdk/client-s3'),
    import('../s3api/region.js'),
    import('../transfer/errors.js'),
  ]);
  const p = await new RemoteStore().get(remote);
  if (!p.s3Host) throw new TransferError(`remote ${remote} has no S3 host: versions need its S3 API (granary remote add ${remote} … --s3-host <host:port>)`);
  return new S3Client({
    endpoint: `${p.https ? 'https' : 'http'}://${p.s3Host}`,
    region: p.region ? s3RegionOf(p.region) : DEFAULT_AWS_REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: p.accessKey, secretAccessKey: p.secretKey },
  });
}

/** `ls <remote>:<bucket>[/<prefix>] --versions` (ListObjectVersions pages); `limit` lines at most. */
export async function remoteLsVersions(loc: RemoteLocation, delimiter: string, json: boolean, limit: number): Promise<void> {
  const { ListObjectVersionsCommand } = await import('@aws-sdk/client-s3');
  const s3 = await remoteS3(loc.remote);
  try {
    let left = limit;
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    for (;;) {
      const r = await s3.send(
        new ListObjectVersionsCommand({
          Bucket: loc.bucket,
          Prefix: loc.prefix,
          ...(delimiter ? { Delimiter: delimiter } : {}),
          MaxKeys: Math.min(PAGE, left),
          ...(keyMarker !== undefined ? { KeyMarker: keyMarker } : {}),
          ...(versionMarker !== undefined ? { VersionIdMarker: versionMarker } : {}),
        }),
      );
      // The answer keeps versions and markers apart: merged back into key order, each key's newest first.
      const lines: VersionLine[] = [
        ...(r.Versions ?? []).map((v) => ({ key: v.Key ?? '', versionId: v.VersionId ?? 'null', size: v.Size ?? 0, ms: v.LastModified?.getTime() ?? 0, current: v.IsLatest === true, deleteMarker: false })),
        ...(r.DeleteMarkers ?? []).map((m) => ({ key: m.Key ?? '', versionId: m.VersionId ?? 'null', size: 0, ms: m.LastModified?.getTime() ?? 0, current: m.IsLatest === true, deleteMarker: true })),
      ]
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : Number(b.current) - Number(a.current) || b.ms - a.ms))
        .map(({ ms, ...v }) => ({ ...v, putTime: ms * 10_000 }));
      let out = '';
      for (const p of r.CommonPrefixes ?? []) {
        if (left-- <= 0) break;
        out += json ? `${JSON.stringify({ prefix: p.Prefix })}\n` : `${p.Prefix}\n`;
      }
      for (const v of lines) {
        if (left-- <= 0) break;
        out += json ? `${JSON.stringify(v)}\n` : versionLine(v);
      }
      process.stdout.write(out);
      if (!r.IsTruncated || left <= 0) return;
      keyMarker = r.NextKeyMarker;
      versionMarker = r.NextVersionIdMarker;
    }
  } finally {
    s3.destroy();
  }
}

/** `restore <remote>:<bucket>/<key> --version-id <id>` (CopyObject from `?versionId=`); answers the new version's id. */
export async function remoteRestore(loc: RemoteLocation, versionId: string): Promise<string> {
  const { CopyObjectCommand } = await import('@aws-sdk/client-s3');
  const s3 = await remoteS3(loc.remote);
  try {
    const source = `${loc.bucket}/${loc.prefix.split('/').map(encodeURIComponent).join('/')}?versionId=${encodeURIComponent(versionId)}`;
    const r = await s3.send(new CopyObjectCommand({ Bucket: loc.bucket, Key: loc.prefix, CopySource: source }));
    return r.VersionId ?? 'null';
  } finally {
    s3.destroy();
  }
}

/** `bucket versioning <remote>:<bucket> [enable|suspend]`: answers the state after (Enabled, Suspended or Off). */
export async function remoteVersioning(loc: RemoteLocation, state: 'Enabled' | 'Suspended' | undefined): Promise<string> {
  const { GetBucketVersioningCommand, PutBucketVersioningCommand } = await import('@aws-sdk/client-s3');
  const s3 = await remoteS3(loc.remote);
  try {
    if (state) await s3.send(new PutBucketVersioningCommand({ Bucket: loc.bucket, VersioningConfiguration: { Status: state } }));
    return (await s3.send(new GetBucketVersioningCommand({ Bucket: loc.bucket }))).Status ?? 'Off';
  } finally {
    s3.destroy();
  }
}

/** Adds `bucket versioning <bucket> [enable|suspend]` to the `bucket` command (see the module comment). */
export function addBucketVersioningCommand(bucket: Command): void {
  withDataDir(
    bucket
      .command('versioning <bucket> [state]')
      .description('print (no state) or set a bucket\'s versioning: enable | suspend (never back to off); <remote>:<bucket> needs --s3-host'),
  ).action(async (name: string, stateText: string | undefined, o: Opts & RemoteOpts) => {
    const states: Record<string, 'Enabled' | 'Suspended'> = { enable: 'Enabled', suspend: 'Suspended' };
    const state = stateText === undefined || stateText === 'status' ? undefined : states[stateText];
    if (stateText !== undefined && stateText !== 'status' && state === undefined) throw new Error(`versioning state must be enable, suspend or status, got ${JSON.stringify(stateText)}`);
    const names = await remoteNames();
    if (isRemoteArg(name, names, o)) {
      const { parseRemote } = await import('../transfer/location.js');
      return void process.stdout.write(`versioning of ${name}: ${await remoteVersioning(parseRemote(name), state)}\n`);
    }
    checkRemoteNames([name], names, o);
    return offline(o, async (g) => {
      const [{ setBucketVersioning }, { Errors }] = await Promise.all([import('../buckets/versioning.js'), import('../errors.js')]);
      if (state) {
        const out = await setBucketVersioning(g, name, state);
        if (out === 'no-bucket') throw Errors.noSuchBucket(name);
        if (out === 'unsupported') throw new Error('versioning is not kept by this metadata store (PostgreSQL) yet');
      }
      const b = await g.meta.getBucket(name);
      if (!b) throw Errors.noSuchBucket(name);
      process.stdout.write(`versioning of bucket ${name}: ${b.settings.versioning ?? 'Off'}\n`);
    });
  });
}
