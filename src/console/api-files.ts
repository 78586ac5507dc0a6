/**
 * The Files screen's API (JSON), the session and every bucket checked by the route table (631 / 403) and every change made by
 * the object domain functions (src/objects/list.ts, src/objects/manage/*):
 * - `GET /api/buckets/:bucket/objects?prefix=&delimiter=&marker=&limit=` → one page of `listObjects`
 *   `{items, commonPrefixes, marker}` ('' marker = last page; 640 bad marker); each item gains `url` (a download
 *   URL, signed for an hour when the bucket is private or protects its originals) and, for images and videos,
 *   `thumb` (an `imageView2` or `vframe` URL, signed likewise); a video's thumbnail is its frame at 3 s (the first
 *   second of many videos is a dark fade-in) and `thumbFallback` its first frame (for videos shorter than that).
 * - `GET /api/buckets/:bucket/stat?key=` → the stat answer plus the same URLs, and `preview`: for an image browsers
 *   cannot show (HEIC/HEIF, TIFF…) a JPEG of it by `imageView2` (at most 1200 px), for a video a 640 px `vframe`
 *   poster (3 s; `posterFallback` at 0 s) (612 missing).
 * - `POST /api/buckets/:bucket/upload-token` `{key?}` → `{token, upHost}`: an upload token for the bucket (or the
 *   key) valid an hour, signed with the caller's pair; the browser uploads to the Kodo API listener at `upHost`.
 * URLs point at the Kodo API listener as the browser can reach it (links.ts `publicBase`).
 * - `POST /api/buckets/:bucket/link` `{key, expires (seconds, 1..31536000), fop?}` → `{url, deadline}`.
 * - `POST /api/buckets/:bucket/ops/:op` `{key, …}` → 204: `delete`; `move`/`copy` `{toBucket?, toKey, force?}` (the
 *   target bucket authorised too); `chgm` `{mimeType?, meta?}` (a meta value '' removes it); `chtype` `{type 0..4}`;
 *   `chstatus` `{status 0|1}`; `deleteAfterDays` `{days ≥ 0}`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { EventActor } from '../events/outbox.js';
import { listObjects } from '../objects/list.js';
import { copyEntry, moveEntry } from '../objects/manage/copy.js';
import { deleteEntry } from '../objects/manage/delete.js';
import type { EntryRef } from '../objects/manage/ref.js';
import { statEntry } from '../objects/manage/stat.js';
import { changeMeta, changeStatus, changeType, setDeleteAfterDays } from '../objects/manage/update.js';
import { sendJson } from '../http/wire.js';
import { toJson } from '../bigint-json.js';
import type { BucketRecord } from '../ports/meta.js';
import type { RouteCall } from '../http/route-call.js';
import type { ConsoleApi } from './api-context.js';
import type { ConsoleSession } from './sessions.js';
import { bodyOf, int, optText, pathParam, queryParam, text, textMap, type Body } from './body.js';
import { downloadUrl, PAGE_LINK_SECONDS, publicBase, uploadToken } from './links.js';

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** Longest private link the console mints: a year, seconds. */
const MAX_LINK_SECONDS = 365 * 86400;
/** Thumbnails: 96 px boxes, cropped to fill. */
const IMAGE_THUMB = 'imageView2/1/w/96/h/96';
/** Frame of a video shown: at 3 s, past the fade-in many videos open with; at 0 s when the video is shorter. */
const VIDEO_THUMB = 'vframe/jpg/offset/3/w/96/h/96';
const VIDEO_THUMB_FIRST = 'vframe/jpg/offset/0/w/96/h/96';
const VIDEO_POSTER = 'vframe/jpg/offset/3/w/640';
const VIDEO_POSTER_FIRST = 'vframe/jpg/offset/0/w/640';
/** A browser-viewable JPEG of an image browsers cannot decode themselves. */
const IMAGE_AS_JPEG = 'imageView2/2/w/1200/h/1200/format/jpg';
/** Image types browsers show as they are; any other image type is previewed as a JPEG (IMAGE_AS_JPEG). */
const BROWSER_IMAGES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/avif', 'image/bmp', 'image/svg+xml', 'image/x-icon', 'image/vnd.microsoft.icon']);

/** The page URLs of one object (see the module comment). */
interface PageUrls {
  url: string;
  thumb?: string;
  thumbFallback?: string;
  preview?: string;
  posterFallback?: string;
}

/** Whether links to `bucket`'s objects must be signed (private, or originals protected). */
function needsSignature(b: BucketRecord): boolean {
  return b.private || b.settings.protected === true;
}

/** The page URLs of one object: `url`, for images and videos `thumb`, and with `detail` (stat) the preview's. */
function pageUrls(g: Granary, base: string, accessKey: string, bucket: BucketRecord, key: string, mimeType: unknown, detail = false): PageUrls {
  const opts = { sign: needsSignature(bucket), seconds: PAGE_LINK_SECONDS, base };
  const link = (fop?: string): string => downloadUrl(g, accessKey, { bucket: bucket.name, key, ...(fop ? { fop } : {}) }, opts).url;
  const out: PageUrls = { url: link() };
  const mime = typeof mimeType === 'string' ? mimeType.toLowerCase() : '';
  if (mime.startsWith('image/')) {
    out.thumb = link(IMAGE_THUMB);
    if (detail && !BROWSER_IMAGES.has(mime)) out.preview = link(IMAGE_AS_JPEG);
  } else if (mime.startsWith('video/')) {
    out.thumb = link(VIDEO_THUMB);
    out.thumbFallback = link(VIDEO_THUMB_FIRST);
    if (detail) {
      out.preview = link(VIDEO_POSTER);
      out.posterFallback = link(VIDEO_POSTER_FIRST);
    }
  }
  return out;
}

/**
 * One management op on an entry of the bucket; `by` the caller (named in event notifications); `call` authorises
 * any other bucket the op touches (the route table's `in-handler` rule).
 */
type Op = (g: Granary, ref: EntryRef, b: Body, by: EventActor, call: Call) => Promise<unknown>;

/** move/copy: the target (same bucket unless `toBucket`), authorised for the caller too. */
function twoEntries(fn: typeof copyEntry): Op {
  return async (g, ref, b, by, call) => {
    const toBucket = optText(b, 'toBucket') || ref.bucket;
    await call.authorize(toBucket, { key: text(b, 'toKey') });
    return fn(g, ref, { bucket: toBucket, key: text(b, 'toKey') }, b.force === true, by);
  };
}

/** The op the path names; 400 `unknownOp` otherwise (the route's precheck: answered before the session check). */
export function opOf(request: FastifyRequest): Op {
  const name = pathParam(request, 'op');
  const op = Object.hasOwn(OPS, name) ? OPS[name] : undefined;
  if (!op) throw Errors.unknownOp(name);
  return op;
}

const OPS: Record<string, Op> = {
  delete: (g, ref, _b, by) => deleteEntry(g, ref, by),
  move: twoEntries(moveEntry),
  copy: twoEntries(copyEntry),
  chgm: (g, ref, b) => {
    const mimeType = optText(b, 'mimeType');
    return changeMeta(g, ref, { ...(mimeType ? { mimeType } : {}), meta: textMap(b, 'meta') });
  },
  chtype: (g, ref, b) => changeType(g, ref, int(b, 'type', 0, 4)),
  chstatus: (g, ref, b, by) => changeStatus(g, ref, int(b, 'status', 0, 1), by),
  deleteAfterDays: (g, ref, b) => setDeleteAfterDays(g, ref, int(b, 'days', 0, 36500)),
};

/** `GET /api/buckets/:bucket/objects`. */
export async function listObjectsApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = call.caller;
  const bucket = call.bucket;
  const limit = queryParam(request, 'limit');
  const page = await listObjects(g, accessKey, {
    bucket: bucket.name,
    prefix: queryParam(request, 'prefix'),
    delimiter: queryParam(request, 'delimiter'),
    marker: queryParam(request, 'marker'),
    limit: limit === '' ? '100' : limit,
    needParts: false,
  });
  const base = publicBase(g, request.headers.host);
  const items = page.items.map((item) => ({ ...item, ...pageUrls(g, base, accessKey, bucket, String(item.key), item.mimeType) }));
  return sendJson(reply, 200, toJson({ items, commonPrefixes: page.commonPrefixes, marker: page.marker }));
}

/** `GET /api/buckets/:bucket/stat`. */
export async function statApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = call.caller;
  const bucket = call.bucket;
  const key = queryParam(request, 'key');
  if (key === '') throw Errors.badRequest('key is required');
  const stat = await statEntry(g, { bucket: bucket.name, key });
  const urls = pageUrls(g, publicBase(g, request.headers.host), accessKey, bucket, key, stat.mimeType, true);
  return sendJson(reply, 200, toJson({ key, ...stat, ...urls }));
}

/** `POST /api/buckets/:bucket/upload-token`. */
export async function uploadTokenApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = call.caller;
  const bucket = call.bucket;
  const key = optText(bodyOf(request), 'key');
  const scope = key === '' ? bucket.name : `${bucket.name}:${key}`;
  return { token: uploadToken(g, accessKey, scope, PAGE_LINK_SECONDS), upHost: publicBase(g, request.headers.host) };
}

/** `POST /api/buckets/:bucket/link`. */
export async function linkApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = call.caller;
  const bucket = call.bucket;
  const b = bodyOf(request);
  const key = text(b, 'key');
  const seconds = int(b, 'expires', 1, MAX_LINK_SECONDS);
  const fop = optText(b, 'fop').replace(/^\?/, '');
  const target = { bucket: bucket.name, key, ...(fop ? { fop } : {}) };
  const link = downloadUrl(g, accessKey, target, { sign: true, seconds, base: publicBase(g, request.headers.host) });
  return { url: link.url, deadline: link.deadline };
}

/** `POST /api/buckets/:bucket/ops/:op`: the op name checked first (precheck). */
export async function opApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const op = opOf(request);
  const { accessKey } = call.caller;
  const b = bodyOf(request);
  await op(g, { bucket: call.bucket.name, key: text(b, 'key') }, b, { accessKey, reqId: request.id }, call);
  return reply.code(204).send();
}
