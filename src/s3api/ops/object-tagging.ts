/**
 * GetObjectTagging, PutObjectTagging, DeleteObjectTagging (`GET|PUT|DELETE /<bucket>/<key>?tagging`): the entry's
 * tags, kept in its reserved metadata `@s3-tagging` (tagging.ts), changed through Kodo's chgm (objects/manage/
 * update.ts) so the entry is otherwise untouched (docs/development/kodo-protocol.md §18.10).
 * Answers: `<Tagging><TagSet><Tag><Key/><Value/></Tag>…</TagSet></Tagging>` (an empty TagSet when none); 200 for
 * Put, 204 for Delete. Errors: NoSuchKey, NoSuchBucket, AccessDenied, MalformedXML, InvalidTag.
 */
import type { Granary } from '../../context.js';
import { changeMeta } from '../../objects/manage/update.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { encodeTags, tagsOfMeta, tagsOfXml, TAGGING_META, type Tag } from '../tagging.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, xmlDocument } from '../xml.js';

/** The entry the request names; NoSuchKey when absent. */
async function entryOf(g: Granary, req: S3Request): Promise<ObjectRecord> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rec = await g.meta.getObject(bucket.name, objectKey(req));
  if (!rec) throw S3Errors.NoSuchKey();
  return rec;
}

/** The `<Tagging>` document of a tag set. */
export function taggingXml(tags: Tag[]): string {
  return xmlDocument('Tagging', `<TagSet>${tags.map(([k, v]) => `<Tag>${el('Key', k)}${el('Value', v)}</Tag>`).join('')}</TagSet>`);
}

export async function getObjectTagging(g: Granary, req: S3Request): Promise<S3Response> {
  return xmlResponse(taggingXml(tagsOfMeta((await entryOf(g, req)).meta)));
}

export async function putObjectTagging(g: Granary, req: S3Request): Promise<S3Response> {
  const rec = await entryOf(g, req);
  const tags = tagsOfXml(parseXml(await readXmlBody(req.body())));
  await changeMeta(g, { bucket: rec.bucket, key: rec.key }, { meta: { [TAGGING_META]: encodeTags(tags) } });
  return { status: 200 };
}

export async function deleteObjectTagging(g: Granary, req: S3Request): Promise<S3Response> {
  const rec = await entryOf(g, req);
  await changeMeta(g, { bucket: rec.bucket, key: rec.key }, { meta: { [TAGGING_META]: '' } });
  return { status: 204 };
}
