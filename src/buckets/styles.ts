/**
 * Bucket image styles (docs/development/kodo-protocol.md §10.1, §6 `bucketInfo.separator`/`styles`): a style is a named fop pipeline;
 * a download of `<key><sep><name>` (sep any one character of the bucket's separators, default `-`) that names no
 * object of its own serves the style's pipeline on `<key>`. `?style/<name>` on a download URL runs it too.
 * Management: set/remove a style, set the separators (uc host, roles/uc/styles.ts; CLI `bucket style|unstyle`).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { parsePipeline } from '../fops/registry.js';
import type { BucketRecord, BucketStyles, ObjectRecord } from '../ports/meta.js';
import { findLiveObject } from '../objects/read.js';

/** Separators of a bucket that never set them. */
export const DEFAULT_SEPARATOR = '-';
/** Characters allowed as separators (one character each). */
const SEPARATOR_CHARS = new Set('-_!~.@$^*+=,:;/'.split(''));
const STYLE_NAME = /^[A-Za-z0-9_.\-!~@]{1,64}$/;
/** Most styles one bucket may define. */
export const MAX_STYLES = 200;
/** Longest style pipeline, characters. */
const MAX_STYLE_LENGTH = 2048;

/** The styles of a bucket (defaults when never set). */
export function stylesOf(b: BucketRecord): BucketStyles {
  return b.styles ?? { separator: DEFAULT_SEPARATOR, styles: {} };
}

/**
 * Checks a style: name of 1..64 letters, digits and `_ . - ! ~ @`; the pipeline must parse as a download-URL
 * fop (400 naming what is wrong).
 */
export function checkStyle(name: string, pipeline: string): void {
  if (!STYLE_NAME.test(name)) throw Errors.badRequest(`style name must be 1-64 of A-Z a-z 0-9 _ . - ! ~ @, got ${JSON.stringify(name)}`);
  if (pipeline === '' || pipeline.length > MAX_STYLE_LENGTH) throw Errors.badRequest(`style must be a fop of 1..${MAX_STYLE_LENGTH} characters`);
  parsePipeline(pipeline, 'url');
}

/** Checks separators: 1..8 distinct characters among `- _ ! ~ . @ $ ^ * + = , : ; /` (400 otherwise). */
export function checkSeparator(sep: string): void {
  const chars = [...sep];
  if (chars.length < 1 || chars.length > 8 || new Set(chars).size !== chars.length || !chars.every((c) => SEPARATOR_CHARS.has(c))) {
    throw Errors.badRequest(`separator must be 1-8 distinct characters of ${[...SEPARATOR_CHARS].join('')}, got ${JSON.stringify(sep)}`);
  }
}

/** Sets (or replaces) the style `name` of `bucket` to `pipeline`. 400 bad name or fop; 631 missing bucket. */
export async function setStyle(g: Granary, bucket: string, name: string, pipeline: string): Promise<void> {
  checkStyle(name, pipeline);
  const ok = await g.meta.updateBucketStyles(bucket, (cur) => {
    if (!(name in cur.styles) && Object.keys(cur.styles).length >= MAX_STYLES) {
      throw Errors.badRequest(`a bucket has at most ${MAX_STYLES} styles`);
    }
    return { separator: cur.separator, styles: { ...cur.styles, [name]: pipeline } };
  });
  if (!ok) throw Errors.noSuchBucket(bucket);
}

/** Removes the style `name` (nothing happens when it does not exist). 631 missing bucket. */
export async function removeStyle(g: Granary, bucket: string, name: string): Promise<void> {
  const ok = await g.meta.updateBucketStyles(bucket, (cur) => {
    const styles = { ...cur.styles };
    delete styles[name];
    return { separator: cur.separator, styles };
  });
  if (!ok) throw Errors.noSuchBucket(bucket);
}

/** Sets the separators of `bucket` (e.g. `-` or `-_!`). 400 bad separator; 631 missing bucket. */
export async function setSeparator(g: Granary, bucket: string, separator: string): Promise<void> {
  checkSeparator(separator);
  const ok = await g.meta.updateBucketStyles(bucket, (cur) => ({ separator, styles: cur.styles }));
  if (!ok) throw Errors.noSuchBucket(bucket);
}

/**
 * The ways `key` may name a style of the bucket: `<prefix><sep><name>` with a defined style `name` and a
 * non-empty prefix, longest style name first (pure; the caller checks which prefix exists).
 */
export function styleCandidates(styles: BucketStyles, key: string): { key: string; name: string; pipeline: string }[] {
  const out: { key: string; name: string; pipeline: string }[] = [];
  const names = Object.keys(styles.styles).sort((a, b) => b.length - a.length);
  for (const name of names) {
    if (key.length <= name.length + 1 || !key.endsWith(name)) continue;
    const sep = key[key.length - name.length - 1] as string;
    if (!styles.separator.includes(sep)) continue;
    out.push({ key: key.slice(0, key.length - name.length - 1), name, pipeline: styles.styles[name] as string });
  }
  return out;
}

/**
 * For a download of a `key` that names no live object: the live object a style suffix points at and the style's
 * pipeline, or undefined.
 */
export async function findStyled(g: Granary, bucket: BucketRecord, key: string): Promise<{ object: ObjectRecord; pipeline: string } | undefined> {
  if (!bucket.styles) return undefined;
  for (const c of styleCandidates(bucket.styles, key)) {
    const object = await findLiveObject(g, bucket.name, c.key);
    if (object) return { object, pipeline: c.pipeline };
  }
  return undefined;
}

/**
 * Expands a leading `style/<name>` stage of a download-URL pipeline into the style's pipeline (400 when the
 * bucket has no such style); other pipelines are returned unchanged.
 */
export function expandStyleStage(bucket: BucketRecord, pipeline: string): string {
  if (!pipeline.startsWith('style/')) return pipeline;
  const bar = pipeline.indexOf('|');
  const name = pipeline.slice('style/'.length, bar < 0 ? undefined : bar);
  const style = stylesOf(bucket).styles[name];
  if (style === undefined) throw Errors.badRequest(`style: no style ${JSON.stringify(name)} in bucket ${bucket.name}`);
  return bar < 0 ? style : `${style}${pipeline.slice(bar)}`;
}

/** The pipeline to run for a styled download: the style's, then the URL's own fop (if any). */
export function withStyle(stylePipeline: string, urlPipeline: string | undefined): string {
  return urlPipeline === undefined ? stylePipeline : `${stylePipeline}|${urlPipeline}`;
}
