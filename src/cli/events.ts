/**
 * Event notification rules of a bucket (offline, root rights): `bucket event add|update|delete|list`. The same
 * checks as `events/add|update|delete|get` on the uc host (events/rules.ts); a running server sees the change at
 * once (it reads the bucket's rules on every change) and delivers the events an offline command writes within 5 s.
 */
import type { Command } from 'commander';
import { Errors } from '../errors.js';
import { addEventRule, deleteEventRule, eventRulesJson, eventRulesOf, updateEventRule, type EventRuleInput } from '../events/rules.js';
import { offline, withDataDir, type Opts } from './context.js';

/** Options of `add` and `update`. */
type RuleOpts = Opts & { event?: string; callback?: string[]; signWith?: string };

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The rule fields given on the command line. */
function ruleInput(name: string, opts: RuleOpts): EventRuleInput {
  const input: EventRuleInput = { name };
  if (opts.event !== undefined) input.events = opts.event.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (opts.callback !== undefined) input.callbackUrls = opts.callback;
  if (opts.prefix !== undefined) input.prefix = opts.prefix;
  if (opts.suffix !== undefined) input.suffix = opts.suffix;
  if (opts.host !== undefined) input.host = opts.host;
  if (opts.signWith !== undefined) input.accessKey = opts.signWith;
  return input;
}

/** The options shared by `add` and `update`. */
function ruleOptions(cmd: Command): Command {
  return withDataDir(cmd)
    .option('--event <names>', 'comma-separated events: put, mkfile, delete, copy, move, disable, enable, restore:completed, …')
    .option('--callback <url>', 'callback URL (repeat for several, tried in order)', collect)
    .option('--prefix <p>', 'only keys starting with p')
    .option('--suffix <s>', 'only keys ending with s')
    .option('--host <host>', 'Host header sent to the callback URLs')
    .option('--sign-with <AccessKey>', "key pair that signs the notifications (default: the bucket owner's)");
}

/** Adds `event …` to the `bucket` command (made by addBucketCommands). */
export function addEventCommands(bucket: Command): void {
  const event = bucket.command('event').description('manage the event notification rules of a bucket');

  ruleOptions(event.command('add <bucket> <name>').description('add a rule: POST the listed events of matching keys to the callback URLs')).action(
    (bucketName: string, name: string, opts: RuleOpts) =>
      offline(opts, async (g) => {
        await addEventRule(g, g.keys.accessKey, bucketName, ruleInput(name, opts));
        process.stdout.write(`added event rule ${name} to bucket ${bucketName}\n`);
      }),
  );
  ruleOptions(event.command('update <bucket> <name>').description('change the given fields of a rule')).action(
    (bucketName: string, name: string, opts: RuleOpts) =>
      offline(opts, async (g) => {
        await updateEventRule(g, g.keys.accessKey, bucketName, ruleInput(name, opts));
        process.stdout.write(`updated event rule ${name} of bucket ${bucketName}\n`);
      }),
  );
  withDataDir(event.command('delete <bucket> <name>').description('delete a rule')).action(
    (bucketName: string, name: string, opts: Opts) =>
      offline(opts, async (g) => {
        await deleteEventRule(g, bucketName, name);
        process.stdout.write(`deleted event rule ${name} of bucket ${bucketName}\n`);
      }),
  );
  withDataDir(event.command('list <bucket>').description('list rules: <name>\\t<events>\\t<prefix>\\t<suffix>\\t<callback URLs>'))
    .option('--json', "print the rules as events/get answers them")
    .action((bucketName: string, opts: Opts & { json?: boolean }) =>
      offline(opts, async (g) => {
        const b = await g.meta.getBucket(bucketName);
        if (!b) throw Errors.noSuchBucket(bucketName);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(eventRulesJson(b))}\n`);
          return;
        }
        for (const r of eventRulesOf(b)) {
          process.stdout.write(`${r.name}\t${r.events.join(',')}\t${r.prefix}\t${r.suffix}\t${r.callbackUrls.join(';')}\n`);
        }
      }),
    );
}
