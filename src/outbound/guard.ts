/**
 * The SSRF guard for outbound requests (upload callbacks, docs/development/kodo-protocol.md §4.3 / §2.6;
 * fetch and mirror §8.5; job and event notifications §9.3; remote watermark images §10.5).
 *
 * Granary makes HTTP requests to URLs chosen by clients (a put policy's `callbackUrl`, a fetch source, ...).
 * Without a guard, anyone holding an upload token could make the server talk to its own loopback services,
 * the private network, or a cloud metadata endpoint. This module classifies IP addresses and decides, with an
 * operator allow list (`GRANARY_OUTBOUND_ALLOW`), whether a connection to an address may be made.
 *
 * The check must be made on the address actually connected to (see client.ts, which calls `checkAddress` from
 * its DNS lookup hook, for IP-literal hosts, and again on the connected socket).
 */
import { BlockList, isIP, isIPv4 } from 'node:net';
import { OUTBOUND_ALLOW_SETTING, OutboundError } from './error.js';

/** Operator policy for outbound requests. */
export interface OutboundPolicy {
  /**
   * Exemptions from the guard: CIDRs (`'10.0.0.0/8'`, `'127.0.0.1/32'`, `'::1/128'`), single IP addresses
   * (`'127.0.0.1'`, same as a full-length CIDR) and host names (`'app.internal'`, matched case-insensitively
   * against the URL host, without a trailing dot; a host name exemption admits whatever that name resolves to).
   */
  allow: string[];
  /**
   * Test seam, unset in production (then `dns.lookup(host, {all: true})` resolves host names): answers the
   * addresses a host name resolves to, e.g. `internal.example.test` → `10.0.0.5` without DNS. Its answers go
   * through the guard exactly like DNS answers. Not called for IP-literal hosts.
   */
  resolve?: OutboundResolver;
  /**
   * Test seam, unset in production: called once per connection, after the guard admitted the target and right
   * before the client hands the address(es) to the socket — the connect step. A refused target never gets here,
   * so a test can count calls to prove no connection was attempted; throwing vetoes the connection (the request
   * fails with a `network` OutboundError carrying its message), so a test can also refuse anything outside
   * loopback as a second line of defence.
   */
  beforeConnect?: (target: OutboundConnectTarget) => void;
  /** Called once for each request the guard refuses (metrics: granary_outbound_refused_total). */
  onRefused?: () => void;
}

/** One address a host name resolves to (the `dns.lookup({all: true})` shape). */
export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

/** Resolves a host name to its addresses (see `OutboundPolicy.resolve`). */
export type OutboundResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** What `OutboundPolicy.beforeConnect` is told: the URL host, the port, and the admitted addresses. */
export interface OutboundConnectTarget {
  /** URL host (normalised: lower case, no brackets). */
  host: string;
  port: number;
  /** The addresses the socket may connect to (one for an IP-literal host; all admitted ones for a name). */
  addresses: string[];
}

type Family = 'ipv4' | 'ipv6';

interface Range {
  net: string;
  prefix: number;
}

/** A list of ranges that share a human-readable category name. */
interface Category {
  name: string;
  list: BlockList;
}

function makeCategory(name: string, family: Family, ranges: Range[]): Category {
  const list = new BlockList();
  for (const r of ranges) list.addSubnet(r.net, r.prefix, family);
  return { name, list };
}

const r = (net: string, prefix: number): Range => ({ net, prefix });

/** Metadata endpoints of common clouds; never admitted by a broader CIDR, only by an exact entry or host name. */
const METADATA_CATEGORY = 'cloud metadata';

// Order matters: the first matching category names the address.
const V4_CATEGORIES: Category[] = [
  // AWS/GCP/Azure/OpenStack IMDS, AWS ECS task metadata, Alibaba Cloud metadata.
  makeCategory(METADATA_CATEGORY, 'ipv4', [r('169.254.169.254', 32), r('169.254.170.2', 32), r('100.100.100.200', 32)]),
  makeCategory('unspecified ("this network")', 'ipv4', [r('0.0.0.0', 8)]),
  makeCategory('loopback', 'ipv4', [r('127.0.0.0', 8)]),
  makeCategory('private', 'ipv4', [r('10.0.0.0', 8), r('172.16.0.0', 12), r('192.168.0.0', 16)]),
  makeCategory('link-local', 'ipv4', [r('169.254.0.0', 16)]),
  makeCategory('carrier-grade NAT', 'ipv4', [r('100.64.0.0', 10)]),
  makeCategory('IETF protocol assignment', 'ipv4', [r('192.0.0.0', 24)]),
  makeCategory('benchmarking', 'ipv4', [r('198.18.0.0', 15)]),
  makeCategory('multicast', 'ipv4', [r('224.0.0.0', 4)]),
  makeCategory('broadcast', 'ipv4', [r('255.255.255.255', 32)]),
  makeCategory('reserved', 'ipv4', [r('240.0.0.0', 4)]),
];

const V6_CATEGORIES: Category[] = [
  makeCategory(METADATA_CATEGORY, 'ipv6', [r('fd00:ec2::254', 128)]),
  makeCategory('unspecified', 'ipv6', [r('::', 128)]),
  makeCategory('loopback', 'ipv6', [r('::1', 128)]),
  makeCategory('unique-local (private)', 'ipv6', [r('fc00::', 7)]),
  makeCategory('link-local', 'ipv6', [r('fe80::', 10)]),
  makeCategory('site-local (deprecated)', 'ipv6', [r('fec0::', 10)]),
  makeCategory('multicast', 'ipv6', [r('ff00::', 8)]),
  makeCategory('discard-only', 'ipv6', [r('100::', 64)]),
  makeCategory('local-use NAT64', 'ipv6', [r('64:ff9b:1::', 48)]),
];

/** Parses an IPv6 text (zone id allowed, embedded dotted quad allowed) into 16 bytes; null when not IPv6. */
function parseIPv6(text: string): Uint8Array | null {
  const zone = text.indexOf('%');
  let s = (zone >= 0 ? text.slice(0, zone) : text).toLowerCase();
  if (isIP(s) !== 6) return null;
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const o = tail.split('.').map(Number) as [number, number, number, number];
    s = `${s.slice(0, lastColon + 1)}${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const halves = s.split('::');
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  const groups = halves.length > 1 ? [...head, ...Array<string>(8 - head.length - rest.length).fill('0'), ...rest] : head;
  if (groups.length !== 8) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    bytes[i * 2] = v >> 8;
    bytes[i * 2 + 1] = v & 0xff;
  });
  return bytes;
}

function v4FromBytes(b: Uint8Array, at: number, invert = false): string {
  const parts: number[] = [];
  for (let i = 0; i < 4; i++) {
    const v = b[at + i] ?? 0;
    parts.push(invert ? ~v & 0xff : v);
  }
  return parts.join('.');
}

function zeroRange(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (b[i] !== 0) return false;
  return true;
}

/** An IPv4 address carried inside an IPv6 one, and how. */
interface Embedded {
  v4: string;
  kind: string;
  /** True when connecting to the IPv6 address reaches the IPv4 host itself (mapped/translated/compatible). */
  sameHost: boolean;
}

/** Finds the IPv4 address embedded in an IPv6 address (mapped, translated, compatible, NAT64, 6to4, Teredo). */
function embeddedV4(b: Uint8Array): Embedded | null {
  const w = (i: number): number => ((b[i * 2] ?? 0) << 8) | (b[i * 2 + 1] ?? 0);
  if (zeroRange(b, 0, 10) && w(5) === 0xffff) return { v4: v4FromBytes(b, 12), kind: 'IPv4-mapped', sameHost: true };
  if (zeroRange(b, 0, 8) && w(4) === 0xffff && w(5) === 0) {
    return { v4: v4FromBytes(b, 12), kind: 'IPv4-translated', sameHost: true };
  }
  if (zeroRange(b, 0, 12)) return { v4: v4FromBytes(b, 12), kind: 'IPv4-compatible', sameHost: true };
  if (w(0) === 0x64 && w(1) === 0xff9b && zeroRange(b, 4, 12)) return { v4: v4FromBytes(b, 12), kind: 'NAT64', sameHost: false };
  if (w(0) === 0x2002) return { v4: v4FromBytes(b, 2), kind: '6to4', sameHost: false };
  if (w(0) === 0x2001 && w(1) === 0) return { v4: v4FromBytes(b, 12, true), kind: 'Teredo', sameHost: false };
  return null;
}

function v6Text(b: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push((((b[i * 2] ?? 0) << 8) | (b[i * 2 + 1] ?? 0)).toString(16));
  return groups.join(':');
}

/** Classification of one address. */
interface Classification {
  /** Category name (`'loopback'`, `'private'`, `'cloud metadata'`, ...), or null for a public address. */
  category: string | null;
  /** True when the address is a cloud metadata endpoint (directly or embedded). */
  metadata: boolean;
  /** The IPv4 address this IPv6 address reaches directly (mapped/translated/compatible forms), if any. */
  sameHostV4?: string;
}

function categoryOf(list: Category[], ip: string, family: Family): string | null {
  for (const c of list) if (c.list.check(ip, family)) return c.name;
  return null;
}

function classify(ip: string): Classification {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIPv4(text)) {
    const category = categoryOf(V4_CATEGORIES, text, 'ipv4');
    return { category, metadata: category === METADATA_CATEGORY };
  }
  const bytes = parseIPv6(text);
  if (!bytes) return { category: 'not an IP address', metadata: false };
  const canonical = v6Text(bytes);
  // `::` and `::1` sit inside the IPv4-compatible range; name them first.
  const direct = categoryOf(V6_CATEGORIES, canonical, 'ipv6');
  if (direct) return { category: direct, metadata: direct === METADATA_CATEGORY };
  const emb = embeddedV4(bytes);
  if (emb) {
    const inner = categoryOf(V4_CATEGORIES, emb.v4, 'ipv4');
    return {
      category: inner ? `${inner} (${emb.kind} ${emb.v4})` : null,
      metadata: inner === METADATA_CATEGORY,
      ...(emb.sameHost ? { sameHostV4: emb.v4 } : {}),
    };
  }
  return { category: null, metadata: false };
}

/**
 * The category of a non-public address (`'loopback'`, `'private'`, `'link-local'`, `'cloud metadata'`,
 * `'loopback (IPv4-mapped 127.0.0.1)'`, ...), or null when the address is public. IPv6 addresses that embed an
 * IPv4 address (`::ffff:0:0/96`, `::ffff:0:0:0/96`, `::/96`, `64:ff9b::/96`, `2002::/16`, Teredo `2001::/32`) are
 * classified by the embedded address. Input that is not an IP address gets the category `'not an IP address'`
 * (fail closed). Brackets and IPv6 zone ids (`fe80::1%eth0`) are accepted.
 */
export function addressCategory(ip: string): string | null {
  return classify(ip).category;
}

/**
 * True when connecting to `ip` must be refused by default: loopback, private, link-local, CGNAT, multicast,
 * unspecified, broadcast, reserved, benchmarking, IETF-assigned, IPv6 unique/site-local, discard, local NAT64,
 * cloud metadata endpoints, and IPv6 forms embedding such an IPv4 address. Documentation ranges stay allowed.
 * Non-IP input is forbidden.
 */
export function isForbiddenAddress(ip: string): boolean {
  return classify(ip).category !== null;
}

/** Lower-cases a host name and strips brackets and a trailing dot. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

const HOST_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;

interface ParsedEntry {
  kind: 'cidr' | 'name';
  /** Normalised text: `addr/prefix` for CIDRs (full length for single addresses), the lower-case host name. */
  text: string;
  net?: string;
  prefix?: number;
  family?: Family;
}

function badEntry(entry: string): Error {
  return new Error(
    `${OUTBOUND_ALLOW_SETTING}: invalid entry "${entry}" (expected a CIDR such as 10.0.0.0/8 or ::1/128, ` +
      'an IP address, or a host name)',
  );
}

function parseEntry(raw: string): ParsedEntry {
  const entry = normalizeHost(raw);
  const slash = entry.indexOf('/');
  const addr = slash >= 0 ? normalizeHost(entry.slice(0, slash)) : entry;
  const version = isIP(addr);
  if (version !== 0) {
    const family: Family = version === 4 ? 'ipv4' : 'ipv6';
    const max = version === 4 ? 32 : 128;
    let prefix = max;
    if (slash >= 0) {
      const p = entry.slice(slash + 1);
      if (!/^\d{1,3}$/.test(p) || Number(p) > max) throw badEntry(raw);
      prefix = Number(p);
    }
    return { kind: 'cidr', text: `${addr}/${prefix}`, net: addr, prefix, family };
  }
  if (slash >= 0 || !HOST_NAME.test(entry) || entry.length > 253) throw badEntry(raw);
  return { kind: 'name', text: entry };
}

/**
 * Parses the `GRANARY_OUTBOUND_ALLOW` setting: entries separated by commas and/or whitespace; each a CIDR
 * (`10.0.0.0/8`, `::1/128`), a single IP address (normalised to a full-length CIDR, `127.0.0.1` →
 * `127.0.0.1/32`) or a host name (lower-cased, trailing dot removed). `undefined` or blank text → `[]`.
 * Throws a plain `Error` naming the setting and the entry when an entry is neither (fail at start-up).
 */
export function parseAllowList(text: string | undefined): string[] {
  if (!text) return [];
  return text
    .split(/[\s,]+/)
    .filter((s) => s.length > 0)
    .map((s) => parseEntry(s).text);
}

interface CompiledPolicy {
  names: Set<string>;
  cidrs: BlockList;
  /** Full-length entries (`a.b.c.d/32`, `x::/128`), canonical text, for the metadata rule. */
  exact: Set<string>;
}

const compiledCache = new WeakMap<OutboundPolicy, { key: string; compiled: CompiledPolicy }>();

function canonicalIp(ip: string): string {
  if (isIPv4(ip)) return ip;
  const b = parseIPv6(ip);
  return b ? v6Text(b) : ip;
}

function compile(policy: OutboundPolicy): CompiledPolicy {
  const key = policy.allow.join(',');
  const hit = compiledCache.get(policy);
  if (hit && hit.key === key) return hit.compiled;
  const compiled: CompiledPolicy = { names: new Set(), cidrs: new BlockList(), exact: new Set() };
  for (const raw of policy.allow) {
    const e = parseEntry(raw);
    if (e.kind === 'name') {
      compiled.names.add(e.text);
    } else if (e.net !== undefined && e.prefix !== undefined && e.family !== undefined) {
      compiled.cidrs.addSubnet(e.net, e.prefix, e.family);
      if (e.prefix === (e.family === 'ipv4' ? 32 : 128)) compiled.exact.add(canonicalIp(e.net));
    }
  }
  compiledCache.set(policy, { key, compiled });
  return compiled;
}

function allowedByCidr(ip: string, c: Classification, compiled: CompiledPolicy): boolean {
  const text = normalizeHost(ip).split('%')[0] ?? '';
  if (c.metadata) {
    // Metadata endpoints need an exact entry: a broad `169.254.0.0/16` or `100.64.0.0/10` does not open them.
    return compiled.exact.has(canonicalIp(text)) || (c.sameHostV4 !== undefined && compiled.exact.has(c.sameHostV4));
  }
  const family: Family = isIPv4(text) ? 'ipv4' : 'ipv6';
  if (compiled.cidrs.check(text, family)) return true;
  return c.sameHostV4 !== undefined && compiled.cidrs.check(c.sameHostV4, 'ipv4');
}

/**
 * True when a connection to `ip` for the URL host `hostname` is permitted: the address is public, or the host
 * name is in the allow list, or an allow CIDR contains the address. Cloud metadata addresses are only admitted
 * by a host name entry or an exact (full-length) address entry, never by a broader CIDR.
 */
export function isAllowedAddress(ip: string, hostname: string, policy: OutboundPolicy): boolean {
  const c = classify(ip);
  if (c.category === null) return true;
  const compiled = compile(policy);
  if (compiled.names.has(normalizeHost(hostname))) return true;
  return allowedByCidr(ip, c, compiled);
}

/**
 * Throws `OutboundError('forbidden-address')` unless a connection to `ip` (the address about to be or just
 * connected to) for the URL host `hostname` is permitted (see `isAllowedAddress`). The message names the host,
 * the address, its category and the `GRANARY_OUTBOUND_ALLOW` setting that opens exceptions.
 */
export function checkAddress(ip: string, hostname: string, policy: OutboundPolicy): void {
  if (isAllowedAddress(ip, hostname, policy)) return;
  throw forbiddenAddressError(hostname, [ip]);
}

/** The `forbidden-address` error for `hostname` resolving to `ips` (all refused). */
export function forbiddenAddressError(hostname: string, ips: string[]): OutboundError {
  const host = normalizeHost(hostname);
  const described = ips.map((ip) => `${ip} [${addressCategory(ip) ?? 'public'}]`).join(', ');
  const literal = isIP(host) !== 0;
  const target = literal && ips.length === 1 && normalizeHost(ips[0] ?? '') === host ? described : `${host} → ${described}`;
  const first = normalizeHost(ips[0] ?? host).split('%')[0] ?? '';
  const example = `${first}/${isIP(first) === 6 ? 128 : 32}`;
  const nameHint = literal ? '' : ` or the host name (${host})`;
  return new OutboundError(
    'forbidden-address',
    `outbound request refused: ${target} is not a public address; to allow it, add the address or a CIDR ` +
      `(e.g. ${example})${nameHint} to the ${OUTBOUND_ALLOW_SETTING} setting`,
  );
}
