/**
 * The deployment id: proof that a metadata store and a blob store belong together, checked before a process
 * serves, sweeps or collects garbage (main.ts, workers/primary.ts, `granary gc`).
 *
 * At the first start of a deployment a random id is written to both: the metadata's `deployment_id` setting and
 * the blob store's marker (`<dataDir>/blobs/deployment.json`, or `<prefix>granary-deployment.json` in the S3
 * bucket), as JSON `{"deploymentId": "<32 hex>", "createdAt": "<ISO 8601>"}`. Every later start compares them:
 *
 * | metadata id | blob marker | blob store / metadata holds            | outcome                                  |
 * |-------------|-------------|----------------------------------------|------------------------------------------|
 * | A           | A           | —                                      | start                                    |
 * | A           | B           | —                                      | refused: two deployments                 |
 * | none        | B           | —                                      | refused: wrong or lost metadata          |
 * | A           | none        | blobs                                  | refused: a blob store of another setup   |
 * | A / none    | none        | no blobs, metadata references blobs    | refused: wrong or emptied blob store     |
 * | none        | none        | blobs, metadata references none        | refused: empty metadata beside blobs     |
 * | A / none    | none        | otherwise (new, or data from before ids) | the id is written where missing, start |
 *
 * A refusal throws `DeploymentMismatch` naming both stores; nothing is read, written or deleted after it. The
 * operator fixes the configuration, or — when the metadata is known to be right — runs
 * `granary deployment --adopt` (which writes the metadata's id into the blob store after the same report).
 * Processes racing at a first start agree through `MetaStore.claimSetting` (the metadata decides the id).
 */
import { randomHexId } from '../random-id.js';
import type { Config } from '../config.js';
import type { BlobStore } from '../ports/blob.js';
import type { MetaStore } from '../ports/meta.js';
import { join } from 'node:path';

/** The metadata setting holding the deployment id. */
export const DEPLOYMENT_SETTING = 'deployment_id';

/** The marker's content (JSON). */
export interface DeploymentMarker {
  deploymentId: string;
  createdAt: string;
}

/** A metadata store and a blob store that do not belong together (the start is refused; exit 1). */
export class DeploymentMismatch extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeploymentMismatch';
  }
}

/** Where the metadata lives, for messages: `<dataDir>/meta.db` or the PostgreSQL URL without its password. */
export function describeMetadata(config: Pick<Config, 'dataDir' | 'metadata'>): string {
  if (config.metadata.kind === 'sqlite') return `SQLite ${join(config.dataDir, 'meta.db')}`;
  try {
    const u = new URL(config.metadata.url);
    if (u.password) u.password = '***';
    return `PostgreSQL ${u.toString()}`;
  } catch {
    return 'PostgreSQL (GRANARY_METADATA)';
  }
}

/** Where the blobs live, for messages: `<dataDir>/blobs` or `s3://bucket/prefix` (at its endpoint). */
export function describeBlobs(config: Pick<Config, 'dataDir' | 'blobs'>): string {
  const b = config.blobs;
  if (b.kind === 'fs') return `files ${join(config.dataDir, 'blobs')}`;
  return `S3 s3://${b.bucket}/${b.prefix}${b.endpoint ? ` at ${b.endpoint}` : ''}`;
}

/** Parses a marker's text; throws DeploymentMismatch when it is not one of ours. */
function parseMarker(text: string, where: string): DeploymentMarker {
  try {
    const m = JSON.parse(text) as Partial<DeploymentMarker>;
    if (typeof m.deploymentId === 'string' && /^[0-9a-f]{32}$/.test(m.deploymentId)) {
      return { deploymentId: m.deploymentId, createdAt: String(m.createdAt ?? '') };
    }
  } catch {
    // reported below
  }
  throw new DeploymentMismatch(`the deployment marker of ${where} is not valid (expected {"deploymentId": "<32 hex>"}); nothing was changed`);
}

/** Whether the blob store holds at least one blob. */
async function holdsBlobs(blobs: BlobStore): Promise<boolean> {
  for await (const _ of blobs.list()) return true;
  return false;
}

/** What `checkDeployment` found: the id, and whether this call wrote it anywhere (a first start or an upgrade). */
export interface DeploymentState {
  deploymentId: string;
  created: 'metadata and blob store' | 'blob store' | 'nothing';
}

/** The marker text for `id`. */
function markerText(id: string): string {
  return `${JSON.stringify({ deploymentId: id, createdAt: new Date().toISOString() } satisfies DeploymentMarker)}\n`;
}

/**
 * Checks that `meta` and `blobs` belong to one deployment (the table above), writing the id where a first start
 * (or the first start of this version) needs it. Throws `DeploymentMismatch` (nothing changed) or the stores'
 * own errors (unreachable database or bucket).
 */
export async function checkDeployment(
  config: Pick<Config, 'dataDir' | 'metadata' | 'blobs'>,
  meta: MetaStore,
  blobs: BlobStore,
): Promise<DeploymentState> {
  const metaWhere = describeMetadata(config);
  const blobsWhere = describeBlobs(config);
  const metaId = await meta.getSetting(DEPLOYMENT_SETTING);
  let markerRaw = await blobs.readMarker();
  if (metaId !== undefined && markerRaw === undefined) {
    // Another process of this deployment may be writing the marker right now (a first start with workers or
    // nodes starting together): look once more before judging.
    await new Promise((r) => setTimeout(r, 1000));
    markerRaw = await blobs.readMarker();
  }
  const marker = markerRaw === undefined ? undefined : parseMarker(markerRaw, blobsWhere);

  if (marker && metaId === marker.deploymentId) return { deploymentId: metaId, created: 'nothing' };
  if (marker && metaId !== undefined) {
    throw new DeploymentMismatch(
      `the metadata (${metaWhere}) belongs to deployment ${metaId} but the blob store (${blobsWhere}) belongs to ` +
        `deployment ${marker.deploymentId}: they are not one Granary; check GRANARY_METADATA, GRANARY_BLOBS and ` +
        `GRANARY_DATA_DIR. Nothing was changed`,
    );
  }
  if (marker) {
    throw new DeploymentMismatch(
      `the blob store (${blobsWhere}) belongs to deployment ${marker.deploymentId} but the metadata (${metaWhere}) ` +
        `carries no deployment id: it is new, empty or not this deployment's (is GRANARY_METADATA set as on the ` +
        `other nodes?). Nothing was changed`,
    );
  }

  const [held, known] = await Promise.all([holdsBlobs(blobs), meta.knowsFileBlobs()]);
  if (held && metaId !== undefined) {
    throw new DeploymentMismatch(
      `the blob store (${blobsWhere}) holds blobs but carries no deployment marker, while the metadata ` +
        `(${metaWhere}) belongs to deployment ${metaId}: the blob store is another setup's. Nothing was changed`,
    );
  }
  if (held && !known) {
    throw new DeploymentMismatch(
      `the blob store (${blobsWhere}) holds blobs but the metadata (${metaWhere}) references none: the metadata is ` +
        `empty, missing or another setup's. Restore the metadata (or point GRANARY_METADATA at it); if the blobs are ` +
        `really garbage, move them away. Nothing was changed`,
    );
  }
  if (!held && known) {
    throw new DeploymentMismatch(
      `the metadata (${metaWhere}) references blobs but the blob store (${blobsWhere}) holds none: it is empty or ` +
        `not this deployment's (check GRANARY_BLOBS and GRANARY_DATA_DIR). Nothing was changed`,
    );
  }
  const id = await meta.claimSetting(DEPLOYMENT_SETTING, metaId ?? randomHexId());
  await blobs.writeMarker(markerText(id));
  return { deploymentId: id, created: metaId === undefined ? 'metadata and blob store' : 'blob store' };
}

/**
 * `granary deployment --adopt`: writes the metadata's deployment id (created when missing) into the blob store,
 * replacing its marker. For an operator who has checked that this metadata and these blobs belong together.
 */
export async function adoptBlobStore(meta: MetaStore, blobs: BlobStore): Promise<string> {
  const id = await meta.claimSetting(DEPLOYMENT_SETTING, randomHexId());
  await blobs.writeMarker(markerText(id));
  return id;
}

/** Reads both ids without changing anything (`granary deployment`); a marker that is not one of ours reads `(invalid marker)`. */
export async function readDeployment(meta: MetaStore, blobs: BlobStore): Promise<{ metadata?: string; blobs?: string }> {
  const [metaId, raw] = await Promise.all([meta.getSetting(DEPLOYMENT_SETTING), blobs.readMarker()]);
  let blobId: string | undefined;
  if (raw !== undefined) {
    try {
      blobId = parseMarker(raw, 'the blob store').deploymentId;
    } catch {
      blobId = '(invalid marker)';
    }
  }
  return { ...(metaId !== undefined ? { metadata: metaId } : {}), ...(blobId !== undefined ? { blobs: blobId } : {}) };
}
