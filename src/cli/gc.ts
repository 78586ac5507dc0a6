/**
 * `granary gc` and `granary deployment`: the operator's side of garbage collection (objects/blobs.ts) and of the
 * deployment id (store/deployment.ts). The server never deletes a blob the metadata does not mention; these
 * commands do, when told to, after the same deployment check as a start.
 *
 * - `granary gc --dry-run`: lists the orphaned blobs (one id a line) and a summary; changes nothing.
 * - `granary gc`: removes them (each checked for references right before its deletion); exit status 0, or 1 when some could
 *   not be removed. Safe while servers run: blobs younger than the oldest live process are never counted.
 * - `granary deployment`: prints the deployment id of the metadata and of the blob store.
 * - `granary deployment --adopt`: writes the metadata's id into the blob store (after checking them by hand).
 */
import type { Command } from 'commander';
import { findOrphanBlobs, orphanCutoffMs } from '../objects/blobs.js';
import { adoptBlobStore, checkDeployment, describeBlobs, describeMetadata, readDeployment } from '../store/deployment.js';
import { offline, withDataDir, type Opts } from './context.js';

/** Adds `gc` and `deployment`. */
export function addGcCommands(program: Command): void {
  withDataDir(
    program
      .command('gc')
      .description('remove blobs no metadata references (orphans); --dry-run lists them only')
      .option('--dry-run', 'list the orphaned blobs and change nothing')
      .option('--json', 'print the summary as one JSON document'),
  ).action((opts: Opts & { dryRun?: boolean; json?: boolean }) =>
    offline(opts, async (g) => {
      await checkDeployment(g.config, g.meta, g.blobs);
      const cutoff = await orphanCutoffMs(g, Date.now());
      const dryRun = opts.dryRun === true;
      const r = await findOrphanBlobs(g, cutoff, {
        remove: !dryRun,
        ...(dryRun && !opts.json ? { onOrphan: (id: string) => process.stdout.write(`orphan\t${id}\n`) } : {}),
      });
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ dryRun, orphans: r.orphans, removed: r.removed, failed: r.failed })}\n`);
      } else if (dryRun) {
        process.stdout.write(`${r.orphans} orphaned blobs in ${describeBlobs(g.config)} (nothing removed; run granary gc to remove them)\n`);
      } else {
        process.stdout.write(`${r.removed} orphaned blobs removed from ${describeBlobs(g.config)}${r.failed > 0 ? `, ${r.failed} could not be` : ''}\n`);
      }
      if (r.failed > 0) process.exitCode = 1;
    }),
  );

  withDataDir(
    program
      .command('deployment')
      .description('print the deployment id of the metadata and of the blob store; --adopt makes the blob store this metadata\'s')
      .option('--adopt', 'write the metadata\'s deployment id into the blob store (check first that they belong together)'),
  ).action((opts: Opts & { adopt?: boolean }) =>
    offline(opts, async (g) => {
      const config = g.config;
      if (opts.adopt) {
        const id = await adoptBlobStore(g.meta, g.blobs);
        process.stdout.write(`the blob store (${describeBlobs(config)}) now belongs to deployment ${id}\n`);
        return;
      }
      const ids = await readDeployment(g.meta, g.blobs);
      process.stdout.write(`metadata\t${describeMetadata(config)}\t${ids.metadata ?? '(none)'}\n`);
      process.stdout.write(`blobs\t${describeBlobs(config)}\t${ids.blobs ?? '(none)'}\n`);
      if (ids.metadata === undefined || ids.metadata !== ids.blobs) process.exitCode = 1;
    }),
  );
}
