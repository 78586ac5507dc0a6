/**
 * Lifecycle rule commands (the CLI side of `rules/add|update|delete|get`, buckets/lifecycle-rule-admin.ts), offline on
 * the data dir like every bucket command (a running server sees a change at its next read of the bucket):
 * `bucket rule add|update <bucket> <name> [--prefix p] [--delete-after-days n] [--to-ia-after-days n]
 * [--to-archive-ir-after-days n] [--to-archive-after-days n] [--to-deep-archive-after-days n]`,
 * `bucket rule delete <bucket> <name>`, `bucket rule list <bucket>` (one line per rule:
 * `<name>\t<prefix>\t<flag>=<days> …` for the days set).
 */
import type { Command } from 'commander';
import { addRule, deleteRule, parseDays, rulesOf, updateRule, type RuleInput } from '../buckets/lifecycle-rule-admin.js';
import { Errors } from '../errors.js';
import type { LifecycleRule } from '../ports/meta.js';
import { offline, withDataDir, type Opts } from './context.js';

/** The day flags: option name (camel case as commander gives it), flag, rule field. */
const FLAGS = [
  ['deleteAfterDays', '--delete-after-days', 'deleteAfterDays'],
  ['toIaAfterDays', '--to-ia-after-days', 'toIAAfterDays'],
  ['toIntelligentTieringAfterDays', '--to-intelligent-tiering-after-days', 'toIntelligentTieringAfterDays'],
  ['toArchiveIrAfterDays', '--to-archive-ir-after-days', 'toArchiveIRAfterDays'],
  ['toArchiveAfterDays', '--to-archive-after-days', 'toArchiveAfterDays'],
  ['toDeepArchiveAfterDays', '--to-deep-archive-after-days', 'toDeepArchiveAfterDays'],
] as const satisfies ReadonlyArray<readonly [string, string, keyof LifecycleRule]>;

/** The rule the flags describe (days not given are 0). */
function ruleFrom(name: string, opts: Opts): RuleInput {
  const rule: RuleInput = {
    name,
    prefix: opts.prefix ?? '',
    deleteAfterDays: 0,
    toIAAfterDays: 0,
    toIntelligentTieringAfterDays: 0,
    toArchiveIRAfterDays: 0,
    toArchiveAfterDays: 0,
    toDeepArchiveAfterDays: 0,
    historyDeleteAfterDays: 0,
    historyToIAAfterDays: 0,
  };
  for (const [opt, flag, field] of FLAGS) rule[field] = parseDays(opts[opt], flag);
  return rule;
}

/** One line of `rule list`. */
function ruleLine(r: LifecycleRule): string {
  const days = FLAGS.filter(([, , field]) => (r[field] ?? 0) !== 0).map(([, flag, field]) => `${flag.slice(2)}=${r[field]}`);
  return `${r.name}\t${r.prefix}\t${days.join(' ')}\n`;
}

/** `add` and `update` share their arguments and flags. */
function withRuleFlags(cmd: Command): Command {
  cmd.option('--prefix <prefix>', "keys the rule governs (default '': every key without a longer rule prefix)");
  for (const [, flag] of FLAGS) cmd.option(`${flag} <n>`, 'days after upload (0 = none; a transition < 0 = at upload)');
  return withDataDir(cmd);
}

/** Adds `bucket rule add|update|delete|list` under the `bucket` command. */
export function addLifecycleRuleCommands(bucket: Command): void {
  const rule = bucket.command('rule').description('manage lifecycle rules (deletion and storage class by key prefix, days after upload)');
  withRuleFlags(rule.command('add <bucket> <name>').description('add a lifecycle rule')).action(
    (bucketName: string, name: string, opts: Opts) =>
      offline(opts, async (g) => {
        await addRule(g, bucketName, ruleFrom(name, opts));
        process.stdout.write(`added lifecycle rule ${name} to bucket ${bucketName}\n`);
      }),
  );
  withRuleFlags(rule.command('update <bucket> <name>').description('replace the prefix and days of a lifecycle rule')).action(
    (bucketName: string, name: string, opts: Opts) =>
      offline(opts, async (g) => {
        await updateRule(g, bucketName, ruleFrom(name, opts));
        process.stdout.write(`updated lifecycle rule ${name} of bucket ${bucketName}\n`);
      }),
  );
  withDataDir(rule.command('delete <bucket> <name>').description('delete a lifecycle rule')).action(
    (bucketName: string, name: string, opts: Opts) =>
      offline(opts, async (g) => {
        await deleteRule(g, bucketName, name);
        process.stdout.write(`deleted lifecycle rule ${name} of bucket ${bucketName}\n`);
      }),
  );
  withDataDir(rule.command('list <bucket>').description('list lifecycle rules: <name>\\t<prefix>\\t<flag>=<days> …')).action(
    (bucketName: string, opts: Opts) =>
      offline(opts, async (g) => {
        const b = await g.meta.getBucket(bucketName);
        if (!b) throw Errors.noSuchBucket(bucketName);
        for (const r of rulesOf(b)) process.stdout.write(ruleLine(r));
      }),
  );
}
