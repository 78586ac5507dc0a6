/**
 * The first check of every URL Granary is asked to fetch from (fetch, async fetch, mirror source, fop resources):
 * only absolute http(s) URLs. Whether the address may be reached is the outbound client's concern
 * (outbound/client.ts). A module of its own: bucket settings check mirror sources without loading the put path.
 */
import { Errors } from '../../errors.js';

/** Checks the URL is absolute http(s); 400 otherwise. */
export function checkSourceUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw Errors.badFetchUrl(`${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw Errors.badFetchUrl(`${u.protocol} URLs are not fetched`);
  return u;
}
