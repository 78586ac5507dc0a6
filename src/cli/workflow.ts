/** `workflow create|list|delete`: workflow templates (jobs/workflow-templates.ts), on the data dir. */
import type { Command } from 'commander';
import type { Granary } from '../context.js';
import {
  deleteWorkflowTemplate,
  listWorkflowTemplates,
  putWorkflowTemplate,
} from '../jobs/workflow-templates.js';
import { offline, withDataDir, type Opts } from './context.js';

/** The owner a command acts for: `--owner <AccessKey>` (a key that exists), else the root key. */
function ownerOf(g: Granary, opts: Opts): string {
  const owner = opts.owner ?? g.keys.accessKey;
  if (g.keyIndex.secretOf(owner) === undefined) throw new Error(`no key ${owner}`);
  return owner;
}

/** `root` for the root key, else the AccessKey. */
function ownerLabel(g: Granary, owner: string): string {
  return g.keyIndex.isRoot(owner) ? 'root' : owner;
}

/** Adds `workflow …`. */
export function addWorkflowCommands(program: Command): void {
  const workflow = program.command('workflow').description('workflow templates (named persistent-processing commands)');
  withDataDir(workflow.command('create <name>').description('create a workflow template, or replace its fields'))
    .requiredOption('--fops <fops>', 'the commands, ;-separated (each may end with |saveas/<EncodedEntryURI>)')
    .option('--pipeline <pipeline>', 'pipeline of the jobs it starts (default: the request\'s, else 0.default)')
    .option('--notify <url>', 'notify URL of the jobs it starts (default: the request\'s, else none)')
    .option('--owner <ak>', 'AccessKey of the account it belongs to (default: the root key)')
    .action((name: string, opts: Opts) =>
      offline(opts, async (g) => {
        const { result, template: t } = await putWorkflowTemplate(g, ownerOf(g, opts), name, {
          fops: opts.fops,
          pipeline: opts.pipeline,
          notifyUrl: opts.notify,
        });
        process.stdout.write(`${result} workflow template ${t.name} (${ownerLabel(g, t.owner)})\n`);
      }),
    );
  withDataDir(workflow.command('list').description('list workflow templates: owner, name, pipeline, notify URL, fops'))
    .option('--owner <ak>', 'only the templates of this AccessKey')
    .action((opts: Opts) =>
      offline(opts, async (g) => {
        const owner = opts.owner === undefined ? undefined : ownerOf(g, opts);
        for (const t of await listWorkflowTemplates(g, owner)) {
          process.stdout.write(`${ownerLabel(g, t.owner)}\t${t.name}\t${t.pipeline ?? '-'}\t${t.notifyUrl ?? '-'}\t${t.fops}\n`);
        }
      }),
    );
  withDataDir(workflow.command('delete <name>').description('delete a workflow template (jobs it started are kept)'))
    .option('--owner <ak>', 'AccessKey of the account it belongs to (default: the root key)')
    .action((name: string, opts: Opts) =>
      offline(opts, async (g) => {
        const owner = ownerOf(g, opts);
        await deleteWorkflowTemplate(g, owner, name);
        process.stdout.write(`deleted workflow template ${name} (${ownerLabel(g, owner)})\n`);
      }),
    );
}
