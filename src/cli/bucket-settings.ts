/**
 * Bucket download settings from the command line (the same domain functions as the uc routes; offline, on the data
 * dir — a running server reads settings per request, so changes apply at once):
 * `bucket max-age <bucket> <seconds>`, `bucket referer <bucket> --mode white|black|off [--pattern a;b]
 * [--allow-empty] [--source-enabled]`, `bucket cors <bucket> set <file.json>|get|clear`,
 * `bucket protect <bucket> on|off`.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { corsRulesToWire, parseCorsRulesJson, setCorsRules } from '../buckets/cors.js';
import { parseMaxAge, setMaxAge } from '../buckets/max-age.js';
import { setProtected } from '../buckets/protection.js';
import { parseRefererSettings, setReferer } from '../buckets/referer.js';
import { Errors } from '../errors.js';
import { offline, withDataDir, type Opts } from './context.js';

const MODES: Record<string, string> = { off: '0', white: '1', black: '2' };

/** Adds the settings subcommands to the `bucket` command. */
export function addBucketSettingsCommands(bucket: Command): void {
  withDataDir(bucket.command('max-age <bucket> <seconds>').description('set the Cache-Control max-age of downloads (<= 0: 31536000)')).action(
    (name: string, seconds: string, opts: Opts) =>
      offline(opts, async (g) => {
        const n = parseMaxAge(seconds);
        await setMaxAge(g, name, n);
        process.stdout.write(`max-age of bucket ${name}: ${n} s\n`);
      }),
  );

  withDataDir(bucket.command('referer <bucket>').description('set referer anti-leech rules (patterns: *, *.domain, domain[:port])'))
    .requiredOption('--mode <mode>', 'white, black or off')
    .option('--pattern <rules>', 'rules separated by ;, e.g. "example.com;*.example.com"')
    .option('--allow-empty', 'let requests without a Referer through')
    .option('--source-enabled', "check Granary's own addresses too (path style, source and bound domains); without it only GRANARY_CDN_DOMAINS")
    .action((name: string, opts: Opts & { allowEmpty?: boolean; sourceEnabled?: boolean }) =>
      offline(opts, async (g) => {
        const mode = MODES[opts.mode ?? ''];
        if (mode === undefined) throw Errors.badRefererSettings(`--mode must be white, black or off, got ${JSON.stringify(opts.mode)}`);
        const settings = parseRefererSettings({
          mode,
          norefer: opts.allowEmpty ? '1' : '0',
          pattern: opts.pattern ?? null,
          sourceEnabled: opts.sourceEnabled ? '1' : '0',
        });
        await setReferer(g, name, settings);
        if (!settings) return void process.stdout.write(`referer rules of bucket ${name}: off\n`);
        const where = settings.sourceEnabled
          ? 'every address (path style, source, bound and CDN domains)'
          : 'CDN domains only (GRANARY_CDN_DOMAINS; Granary\'s own addresses too with --source-enabled)';
        process.stdout.write(
          `referer rules of bucket ${name}: ${settings.mode === 1 ? 'white' : 'black'} list ${settings.patterns.join(';')}; ` +
            `empty Referer ${settings.allowEmpty ? 'allowed' : 'refused'}; checked on ${where}\n`,
        );
      }),
    );

  withDataDir(bucket.command('cors <bucket> <action> [file]').description('CORS rules of downloads: set <file.json> (Kodo JSON array) | get | clear')).action(
    (name: string, action: string, file: string | undefined, opts: Opts) =>
      offline(opts, async (g) => {
        if (action === 'get') {
          const b = await g.meta.getBucket(name);
          if (!b) throw Errors.noSuchBucket(name);
          return void process.stdout.write(`${JSON.stringify(corsRulesToWire(b.settings.cors ?? []), null, 2)}\n`);
        }
        if (action === 'clear') {
          await setCorsRules(g, name, []);
          return void process.stdout.write(`CORS rules of bucket ${name} cleared (global * applies)\n`);
        }
        if (action !== 'set' || file === undefined) throw new Error('expected cors <bucket> set <file.json> | get | clear');
        const rules = parseCorsRulesJson(await readFile(file, 'utf8'));
        await setCorsRules(g, name, rules);
        process.stdout.write(
          rules.length > 0 ? `CORS rules of bucket ${name}: ${rules.length} rule(s)\n` : `CORS rules of bucket ${name} cleared (global * applies)\n`,
        );
      }),
  );

  withDataDir(bucket.command('protect <bucket> <state>').description('original protection on|off: only styles and signed URLs serve the bucket')).action(
    (name: string, state: string, opts: Opts) =>
      offline(opts, async (g) => {
        if (state !== 'on' && state !== 'off') throw new Error(`expected on or off, got ${JSON.stringify(state)}`);
        await setProtected(g, name, state === 'on');
        process.stdout.write(`original protection ${state === 'on' ? 'on' : 'off'} for bucket ${name}\n`);
      }),
  );
}
