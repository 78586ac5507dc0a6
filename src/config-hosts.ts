/**
 * Advertised hosts (docs/reference/configuration.md, GRANARY_<SERVICE>_HOSTS): the `host[:port]` names the region
 * queries (docs/development/kodo-protocol.md §1.2) give the SDKs for each service, in Kodo's order — the first is the main host, the
 * others are backups the SDKs switch to when the main one fails. A service without a list gets the host of
 * GRANARY_PUBLIC_URL, as before.
 */

/** The services a region answer names (`io_src` follows `io`). */
export const ADVERTISED_SERVICES = ['up', 'io', 'rs', 'rsf', 'api', 'uc'] as const;
export type AdvertisedService = (typeof ADVERTISED_SERVICES)[number];

/** Operator-set host lists per service; a service absent here uses the public URL's host. */
export type AdvertisedHosts = Partial<Record<AdvertisedService, string[]>>;

/** `host[:port]`: a DNS name, IPv4 address or bracketed IPv6 address, optionally a port 1–65535; no scheme, no path. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

/**
 * Parses one GRANARY_<SERVICE>_HOSTS value: comma-separated `host[:port]` entries (spaces around them ignored,
 * duplicates dropped, order kept). Throws an Error naming the variable for an empty list or a bad entry.
 */
export function parseHostList(name: string, raw: string): string[] {
  const out: string[] = [];
  for (const part of raw.split(',')) {
    const host = part.trim();
    if (host === '') continue;
    const m = HOST.exec(host);
    const port = m?.[1] === undefined ? 1 : Number(m[1]);
    if (!m || port < 1 || port > 65535) {
      throw new Error(`${name} must be a comma-separated list of host[:port] (no scheme, no path), got ${JSON.stringify(host)}`);
    }
    if (!out.includes(host)) out.push(host);
  }
  if (out.length === 0) throw new Error(`${name} must name at least one host[:port]`);
  return out;
}

/** Reads GRANARY_UP_HOSTS, GRANARY_IO_HOSTS, GRANARY_RS_HOSTS, GRANARY_RSF_HOSTS, GRANARY_API_HOSTS, GRANARY_UC_HOSTS. */
export function advertisedHostsVar(env: Record<string, string | undefined>): AdvertisedHosts {
  const out: AdvertisedHosts = {};
  for (const service of ADVERTISED_SERVICES) {
    const name = `GRANARY_${service.toUpperCase()}_HOSTS`;
    const raw = env[name];
    if (raw !== undefined && raw !== '') out[service] = parseHostList(name, raw);
  }
  return out;
}
