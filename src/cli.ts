/**
 * The `granary` command (commander): `serve`, `bucket create|list|delete|nrop|style|unstyle|separator|styles|quota`,
 * `bucket max-age|referer|cors|protect` (download settings),
 * `bucket rule add|update|delete|list`,
 * `domain bind|list`, `keys show|create|list|delete`, `iam user|keys|group|policy|actions|audits` (cli/iam.ts), `pipeline create|list`, entry commands `stat`, `rm`,
 * `cp`, `mv`, `ls` (on the data dir, or on a remote with `<remote>:<bucket>/<key>`, cli/entries.ts), `scrub` (check every blob against its checksums), `gc` (remove orphaned blobs, or list them
 * with --dry-run) and `deployment` (the deployment id of the metadata and the blob store, store/deployment.ts).
 * Flags mirror the GRANARY_* environment variables. Commands other than `serve` work on the configured stores
 * directly (store/open.ts: the data dir, or the cluster's PostgreSQL and S3 with GRANARY_METADATA/GRANARY_BLOBS;
 * safe while servers run; domain changes reach a running server within 5 s; a data dir that does not exist is
 * refused unless --create-data-dir). Client commands on remotes: cli/transfer.ts, cli/remote-commands.ts.
 */
import type { Command } from 'commander';
import { addBucketCommands } from './cli/buckets.js';
import { addBucketSettingsCommands } from './cli/bucket-settings.js';
import { addEntryCommands } from './cli/entries.js';
import { addEventCommands } from './cli/events.js';
import { addGcCommands } from './cli/gc.js';
import { addIamCommands } from './cli/iam.js';
import { addKeyCommands } from './cli/keys.js';
import { addLifecycleRuleCommands } from './cli/lifecycle-rules.js';
import { addPipelineCommands } from './cli/pipelines.js';
import { newProgram, runProgram } from './cli/program.js';
import { addQuotaCommand } from './cli/bucket-quota.js';
import { addReplicationCommands } from './cli/replication.js';
import { addScrubCommand } from './cli/scrub.js';
import { addServeCommand } from './cli/serve.js';
import { addBucketVersioningCommand } from './cli/versions.js';
import { addTransferCommands } from './cli/transfer.js';
import { addWorkflowCommands } from './cli/workflow.js';

/** Builds the command tree (one module per group under cli/). */
export function buildCli(): Command {
  const program = newProgram();
  addServeCommand(program);
  const bucket = addBucketCommands(program);
  addBucketSettingsCommands(bucket);
  addBucketVersioningCommand(bucket);
  addEventCommands(bucket);
  addQuotaCommand(bucket);
  addLifecycleRuleCommands(bucket);
  addEntryCommands(program);
  addScrubCommand(program);
  addGcCommands(program);
  addPipelineCommands(program);
  addKeyCommands(program);
  addIamCommands(program);
  addWorkflowCommands(program);
  addTransferCommands(program);
  addReplicationCommands(program);
  return program;
}

/**
 * Runs `granary` with the full command tree (cli/start.ts, the entry of bin/granary.js, calls it for every command
 * outside the client groups). Errors print `granary: <message>` and exit 1 (cli/program.ts runProgram).
 */
export async function main(argv: string[]): Promise<void> {
  await runProgram(buildCli(), argv);
}
