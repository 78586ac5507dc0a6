/**
 * The bodies of the region queries (docs/development/kodo-protocol.md §1.2, "Region query"), one shape per query version, each built
 * from what the SDKs' parsers read (docs/reference/sdk-compatibility.md). `RegionHosts` lists each service's hosts in Kodo's
 * order: main first, then backups (config-hosts.ts). Hosts are `host[:port]` without scheme, except in the v1 answer,
 * which carries URLs.
 */
import type { AdvertisedService } from '../../config-hosts.js';

/** Every service's `host[:port]` list (never empty), main first. */
export type RegionHosts = Record<AdvertisedService, string[]>;

/** What every answer needs: the region id, seconds the SDKs may cache the answer, and the hosts. */
export interface RegionFacts {
  region: string;
  ttl: number;
  hosts: RegionHosts;
  /** The queried bucket's default source (`io_src`) domains, `host[:port]`; absent: the io hosts. */
  ioSrc?: string[];
}

/** `{main, backup}`: the first host and the others (Kodo's v2/v3 host group). */
function group(hosts: string[]): { main: string[]; backup: string[] } {
  return { main: hosts.slice(0, 1), backup: hosts.slice(1) };
}

/**
 * `/v1/query` (Java SDK `com.qiniu.common.AutoZone.ZoneInfo.buildFromUcRet`): `{ttl, http:{up, io}, https:{up, io}}`
 * with URLs. The Java parser reads `http.up[0]` (main), `http.up[1]` (backup) and `http.up[2]` in the form
 * `-H <host> http://<ip>` (it splits on spaces and `//`), and `https.up[0..1]`; a shorter `http.up` makes it fail.
 * So `http.up` is exactly [main, backup or main again, `-H <main host> http://<main>`].
 */
export function v1Answer(f: RegionFacts): Record<string, unknown> {
  const up = f.hosts.up;
  const [main] = up;
  const backup = up[1] ?? main;
  const hostname = (main ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return {
    ttl: f.ttl,
    http: { up: [`http://${main}`, `http://${backup}`, `-H ${hostname} http://${main}`], io: f.hosts.io.map((h) => `http://${h}`) },
    https: { up: [`https://${main}`, `https://${backup}`], io: f.hosts.io.map((h) => `https://${h}`) },
  };
}

/**
 * One region in the v2/v3 shape (Go SDK `storage.UcQueryRet`, Java SDK `com.qiniu.storage.AutoRegion.HostRet`,
 * qiniu-js `data.up.acc.main`): `up.acc`/`up.src` `{main, backup}` (Java reads `acc` as its source hosts and `src`
 * as its accelerated ones, Go the other way round: both carry the same list), `up.old_acc`/`old_src`,
 * `io.src.main`, `io_src.src.main`, and `rs|rsf|api|uc.acc` (Java takes `acc` before `src`, Go `src` before `acc`).
 */
export function v2Region(f: RegionFacts): Record<string, unknown> {
  const h = f.hosts;
  return {
    region: f.region,
    ttl: f.ttl,
    up: {
      acc: group(h.up),
      src: group(h.up),
      old_acc: { main: [], info: '' },
      old_src: { main: [], info: '' },
    },
    io: { src: group(h.io) },
    io_src: { src: group(f.ioSrc ?? h.io) },
    rs: { acc: group(h.rs) },
    rsf: { acc: group(h.rsf) },
    api: { acc: group(h.api) },
    uc: { acc: group(h.uc) },
  };
}

/** `/v3/query`: `{hosts: [<v2 region>]}` (Java SDK `AutoRegion.getRegionJson` reads `hosts[].up.acc.main` etc.). */
export function v3Answer(f: RegionFacts): Record<string, unknown> {
  return { hosts: [v2Region(f)] };
}

/** `{domains, old}` of the v4 shape (Go SDK `v4QueryServiceHosts`: `domains` preferred, `old` alternative). */
function domains(hosts: string[]): { domains: string[]; old: string[] } {
  return { domains: hosts, old: [] };
}

/**
 * One region in the v4 shape (Node SDK `QueryRegionsProvider`, Python `_get_region_from_query`, Go
 * `storagev2/region.v4QueryRegion`): every service object present (the Node SDK dereferences `uc.domains`,
 * `s3.domains` and `s3.region_alias` unconditionally, docs/development/kodo-protocol.md §14 item 10), `up.acc_domains` empty.
 */
export function v4Region(f: RegionFacts): Record<string, unknown> {
  const h = f.hosts;
  return {
    region: f.region,
    ttl: f.ttl,
    up: { domains: h.up, acc_domains: [], old: [] },
    io: domains(h.io),
    io_src: domains(f.ioSrc ?? h.io),
    rs: domains(h.rs),
    rsf: domains(h.rsf),
    api: domains(h.api),
    uc: domains(h.uc),
    s3: { domains: h.up.slice(0, 1), region_alias: f.region },
  };
}

/** `/v4/query`: `{hosts: [<v4 region>]}`. */
export function v4Answer(f: RegionFacts): Record<string, unknown> {
  return { hosts: [v4Region(f)] };
}

/**
 * `/regions` (Go SDK `storagev2/region.regionsResponse`: `regions[].{id, ttl, up, io, rs, rsf, api, uc}` each
 * `{domains, old}`): every region with its services' hosts, plus `description`.
 */
export function regionsAnswer(f: RegionFacts): Record<string, unknown> {
  const { region: _region, ...services } = v4Region(f);
  return { regions: [{ id: f.region, description: 'Granary local region', ...services }] };
}
