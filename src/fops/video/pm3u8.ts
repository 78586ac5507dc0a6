/**
 * `pm3u8/0[/expires/<s>][/deadline/<unix s>]` (docs/development/kodo-protocol.md §10.6): a playlist of a private
 * bucket with its segments made readable. Every URI of the playlist (segment lines, `URI="…"` of `#EXT-X-KEY` and
 * `#EXT-X-MAP`) that names an entry of the playlist's own bucket on this server — resolved against the playlist's
 * download URL, so relative ones count — becomes an absolute private download URL signed with the bucket owner's
 * key pair, valid until `deadline`, else `expires` seconds from now (default 43200, 1..31536000). Other URIs are
 * left as they are. Never cached (`volatile`): each request signs anew.
 *
 * Errors (400): a mode other than 0, a bad number, a source that is not an `#EXTM3U` playlist or is larger than
 * 1 MiB.
 */
import { Errors } from '../../errors.js';
import { nowSeconds } from '../../ports/clock.js';
import type { BucketUrls, FopCommand } from '../types.js';
import { pairs, parseIntIn } from './common.js';

export interface Pm3u8Params {
  expires: number;
  deadline?: number;
}

/** Largest playlist rewritten, bytes. */
const MAX_PLAYLIST_BYTES = 1024 * 1024;

const bad = (what: string): never => {
  throw Errors.badRequest(`pm3u8: ${what}`);
};

export function parsePm3u8(args: string[]): Pm3u8Params {
  const [mode, ...rest] = args;
  if (mode !== '0') return bad(`mode must be 0, got ${JSON.stringify(mode ?? '')}`);
  const p: Pm3u8Params = { expires: 43200 };
  for (const [k, v] of pairs('pm3u8', rest)) {
    if (k === 'expires') p.expires = parseIntIn('pm3u8', 'expires', v, 1, 31_536_000);
    else if (k === 'deadline') p.deadline = parseIntIn('pm3u8', 'deadline', v, 1, 0xffffffff);
    else bad(`unknown parameter ${JSON.stringify(k)}`);
  }
  return p;
}

/** `uri` (as written in the playlist at `base`) signed when it names an entry of the bucket; else unchanged. */
function signed(uri: string, base: string, urls: BucketUrls, deadline: number): string {
  let u: URL;
  try {
    u = new URL(uri, base);
  } catch {
    return uri;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || urls.keyOf(u) === undefined) return uri;
  u.hash = '';
  return urls.sign(u.href, deadline);
}

/** Rewrites every URI of `text` (see the module comment). */
export function signPlaylist(text: string, base: string, urls: BucketUrls, deadline: number): string {
  return text
    .split(/\r?\n/)
    .map((line) => {
      const t = line.trim();
      if (t === '') return line;
      if (!t.startsWith('#')) return signed(t, base, urls, deadline);
      if (!/^#EXT-X-(KEY|MAP|SESSION-KEY):/.test(t)) return line;
      return line.replace(/URI="([^"]*)"/, (_m, uri: string) => `URI="${signed(uri, base, urls, deadline)}"`);
    })
    .join('\n');
}

export const pm3u8: FopCommand<Pm3u8Params> = {
  name: 'pm3u8',
  volatile: true,
  parse: parsePm3u8,
  async run(source, p, ctx) {
    if (source.size > MAX_PLAYLIST_BYTES) bad(`the playlist is ${source.size} bytes, at most ${MAX_PLAYLIST_BYTES}`);
    const text = (await source.bytes()).toString('utf8');
    if (!text.startsWith('#EXTM3U')) bad('the source is not an M3U8 playlist (#EXTM3U)');
    if (!ctx.urls) throw Errors.internal('pm3u8: no download URLs in this context');
    const base = await ctx.urls.urlOf(ctx.bucket.name, ctx.key);
    const deadline = p.deadline ?? nowSeconds(ctx.clock) + p.expires;
    return { body: Buffer.from(signPlaylist(text, base, ctx.urls, deadline)), contentType: 'application/x-mpegurl' };
  },
};
