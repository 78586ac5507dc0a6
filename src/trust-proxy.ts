/**
 * GRANARY_TRUST_PROXY: which peers of the console listener are reverse proxies whose `X-Forwarded-For`,
 * `X-Forwarded-Proto` and `X-Forwarded-Host` headers are believed (docs/operations/console-security.md). Unset (or `false`):
 * none — the headers are ignored, the client address is the socket's, the scheme is the socket's and the host is
 * `Host`. `true`: every peer (only when nothing but the proxy can reach the port). Otherwise a comma-separated list
 * of addresses and CIDR blocks (`127.0.0.1, 10.0.0.0/8, ::1`) and the names `loopback`, `linklocal`, `uniquelocal`.
 * The value is given to fastify's `trustProxy` (proxy-addr): with a list, the client address is the nearest
 * address in `X-Forwarded-For` that is not a trusted proxy.
 */
import { isIP } from 'node:net';

/** What fastify's `trustProxy` option takes from this setting: false (none), true (all) or the list. */
export type TrustProxy = boolean | string[];

const NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Whether `item` is an address, a CIDR block (`addr/bits`, bits within the family's width) or a known name. */
function validItem(item: string): boolean {
  if (NAMES.has(item)) return true;
  const [addr = '', bits, extra] = item.split('/');
  if (extra !== undefined) return false;
  const family = isIP(addr);
  if (family === 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** Parses GRANARY_TRUST_PROXY (see the module comment); throws an Error naming the variable and the bad item. */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const v = raw?.trim() ?? '';
  if (v === '' || v.toLowerCase() === 'false') return false;
  if (v.toLowerCase() === 'true') return true;
  const items = v.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const item of items) {
    if (!validItem(item)) {
      throw new Error(
        `GRANARY_TRUST_PROXY must be true, false or a comma-separated list of addresses, CIDR blocks, loopback, linklocal or uniquelocal; got ${JSON.stringify(item)}`,
      );
    }
  }
  return items.length === 0 ? false : items;
}
