/**
 * Referer anti-leech (docs/development/kodo-protocol.md §8.6 `POST /referAntiLeech?bucket=&mode=&norefer=&pattern=&source_enabled=`;
 * bucketInfo `anti_leech_mode`, `refer_wl`, `refer_bl`, `no_refer`, `source_enabled`).
 *
 * - `mode` 0 off (the other parameters are ignored and the setting is removed, as Kodo's spec says), 1 white list
 *   (only matching Referers pass), 2 black list (matching Referers are refused).
 * - `pattern`: `;`-separated rules, Kodo's three forms plus an optional port (Kodo's console accepts
 *   `^((\*|[-0-9a-z]+)(\.[-0-9a-z]+)+(:\d{1,5})?|\*)$`; Granary also accepts one-label hosts such as `localhost`):
 *   `*` any Referer; `*.example.com` any subdomain, at any depth, but NOT `example.com` itself (list both to allow
 *   both, as nginx's `valid_referers`); `example.com` exactly that host. A rule without a port matches any port of
 *   the Referer; with one, only that port (the Referer's default port is 80/443 by scheme). Hosts compare
 *   case-insensitively (rules are stored lower case). At most MAX_REFERER_PATTERNS rules.
 * - `norefer` 1: a request without a Referer (or with an empty one) passes, in both modes; 0: it is refused.
 * - `source_enabled` 1: the rules apply everywhere — CDN domains and Granary's own addresses (Kodo's source
 *   station: path-style URLs, the buckets' source domains, bound domains not listed as CDN domains); 0 (the SDKs'
 *   default, "only CDN anti-leech"): only on the bound domains listed in GRANARY_CDN_DOMAINS. Granary is Kodo's
 *   source station, not a CDN: with no CDN domain configured, rules with `source_enabled` 0 apply nowhere.
 * - A Referer that is not a URL has no host: it matches only `*` (refused by a white list without `*`).
 * Enforced on every download of the bucket — originals, fops, styles, and signed private URLs alike (a token proves
 * the URL was issued, not where it is embedded) — with 403 `refererRefused`.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketRecord, RefererSettings } from '../ports/meta.js';

/** Most rules one bucket may list. */
export const MAX_REFERER_PATTERNS = 100;
/** A rule: `*`, or an optional `*.` wildcard, labels of `[-0-9a-z]`, an optional `:port`. */
const PATTERN = /^(\*|(\*\.)?[-0-9a-z]+(\.[-0-9a-z]+)*(:\d{1,5})?)$/;

/** The wire parameters of `referAntiLeech` (null when absent). */
export interface RefererParams {
  mode: string | null;
  norefer: string | null;
  pattern: string | null;
  sourceEnabled: string | null;
}

function flag(value: string | null, name: string): boolean {
  if (value === null || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw Errors.badRefererSettings(`${name} must be 0 or 1, got ${JSON.stringify(value)}`);
}

/** Splits and checks `pattern` (400 naming `pattern` and the bad rule); rules are lower-cased, duplicates dropped. */
export function parsePatterns(pattern: string): string[] {
  const rules = [...new Set(pattern.split(';').map((p) => p.trim().toLowerCase()).filter((p) => p !== ''))];
  if (rules.length === 0) throw Errors.badRefererSettings('pattern must list at least one rule for mode 1 or 2');
  if (rules.length > MAX_REFERER_PATTERNS) throw Errors.badRefererSettings(`pattern lists more than ${MAX_REFERER_PATTERNS} rules`);
  for (const r of rules) {
    const port = r.match(/:(\d+)$/)?.[1];
    if (r.length > 253 || !PATTERN.test(r) || (port !== undefined && Number(port) > 65535)) {
      throw Errors.badRefererSettings(`pattern rule ${JSON.stringify(r)} is not *, *.domain or domain (with an optional :port)`);
    }
  }
  return rules;
}

/**
 * The setting the wire parameters ask for (undefined = off, mode 0). 400 `badRefererSettings` naming the parameter:
 * `mode` not 0/1/2, `norefer`/`source_enabled` not 0/1, a bad or missing `pattern` for modes 1 and 2.
 */
export function parseRefererSettings(p: RefererParams): RefererSettings | undefined {
  const mode = p.mode === null || p.mode === '' ? '0' : p.mode;
  if (mode !== '0' && mode !== '1' && mode !== '2') throw Errors.badRefererSettings(`mode must be 0, 1 or 2, got ${JSON.stringify(p.mode)}`);
  const allowEmpty = flag(p.norefer, 'norefer');
  const sourceEnabled = flag(p.sourceEnabled, 'source_enabled');
  if (mode === '0') return undefined;
  return { mode: mode === '1' ? 1 : 2, patterns: parsePatterns(p.pattern ?? ''), allowEmpty, sourceEnabled };
}

/** Sets (or with undefined removes) the bucket's referer rules. 631 when the bucket is missing. */
export async function setReferer(g: Granary, bucket: string, settings: RefererSettings | undefined): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (settings) next.referer = settings;
    else delete next.referer;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/** Host (lower case) and effective port ('' when unknown) of a Referer; undefined when not a URL. */
function refererHost(referer: string): { host: string; port: string } | undefined {
  let u: URL;
  try {
    u = new URL(referer);
  } catch {
    return undefined;
  }
  if (u.hostname === '') return undefined;
  const port = u.port !== '' ? u.port : u.protocol === 'http:' ? '80' : u.protocol === 'https:' ? '443' : '';
  return { host: u.hostname.toLowerCase(), port };
}

/** Whether one rule matches a Referer host/port (see the module comment). */
export function patternMatches(rule: string, host: string, port: string): boolean {
  if (rule === '*') return true;
  const colon = rule.lastIndexOf(':');
  const rulePort = colon >= 0 ? rule.slice(colon + 1) : undefined;
  const ruleHost = colon >= 0 ? rule.slice(0, colon) : rule;
  if (rulePort !== undefined && rulePort !== port) return false;
  if (ruleHost.startsWith('*.')) return host.endsWith(ruleHost.slice(1)) && host.length > ruleHost.length - 1;
  return host === ruleHost;
}

/** Why a request with this Referer header is refused, or undefined when it passes. */
export function refererRefusal(settings: RefererSettings, referer: string | undefined): string | undefined {
  if (referer === undefined || referer.trim() === '') {
    return settings.allowEmpty ? undefined : 'requests without a Referer are not allowed';
  }
  const at = refererHost(referer.trim());
  const matched = settings.patterns.some((r) => r === '*' || (at !== undefined && patternMatches(r, at.host, at.port)));
  if (settings.mode === 1 && !matched) return `Referer ${at ? at.host : JSON.stringify(referer)} is not in the white list`;
  if (settings.mode === 2 && matched) return `Referer ${at ? at.host : JSON.stringify(referer)} is in the black list`;
  return undefined;
}

/**
 * Whether the bucket's referer rules apply to a download made through a CDN domain (`viaCdn`, GRANARY_CDN_DOMAINS)
 * or on any other address of Granary (the source station: only with `source_enabled`).
 */
export function refererApplies(bucket: Pick<BucketRecord, 'settings'>, viaCdn: boolean): boolean {
  const r = bucket.settings.referer;
  return r !== undefined && (viaCdn || r.sourceEnabled);
}

/** Refuses (403 `refererRefused`) a download the bucket's referer rules do not allow. */
export function checkReferer(bucket: Pick<BucketRecord, 'settings'>, referer: string | undefined, viaCdn: boolean): void {
  const r = bucket.settings.referer;
  if (!r || !refererApplies(bucket, viaCdn)) return;
  const why = refererRefusal(r, referer);
  if (why !== undefined) throw Errors.refererRefused(why);
}
