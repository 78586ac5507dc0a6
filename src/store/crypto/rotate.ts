/**
 * Master-key rotation (`granary keys rotate-master`, docs/reference/encryption.md "Rotation"): every encrypted
 * blob's data key is re-wrapped from the old master key to the new one by rewriting its fixed-size header in place
 * (store/crypto/envelope.ts `rewrapHeader`); no data byte is decrypted or rewritten, SSE-C blobs included (their
 * customer wrap sits inside the master wrap).
 *
 * Resumable: the metadata setting `master_key_rotation` = `<old id>><new id>` is written first, so a rotation cut
 * short (a crash, Ctrl-C) is finished by running the command again with the same two files — headers already
 * under the new key are skipped — and a server start is refused meanwhile (store/crypto/master-key.ts): some blobs
 * open only with the old key, others only with the new. At the end `master_key_id` becomes the new id and the
 * rotation setting is cleared. Run with the server stopped (a header rewritten under a reader is read torn).
 *
 * Covered: file blobs on the local disk and inline blobs in the metadata database. Blobs in an S3 bucket cannot be
 * changed in place (`BlobStore.rewriteHead` absent): the rotation refuses before changing anything.
 */
import type { BlobStore } from '../../ports/blob.js';
import type { MetaStore } from '../../ports/meta.js';
import { hasMagic, headerKeyId, HEADER_BYTES, type MasterKey, rewrapHeader } from './envelope.js';
import { MASTER_KEY_SETTING, MasterKeyError, ROTATION_SETTING } from './master-key.js';

/** What a rotation did: headers re-wrapped (files, inline), already under the new key, and blobs not encrypted. */
export interface RotationReport {
  files: number;
  inline: number;
  alreadyNew: number;
  unencrypted: number;
}

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/**
 * Re-wraps every encrypted blob of `files` (the store of file blobs, not the encrypting wrapper) and every inline
 * blob of `meta` from `from` to `to`. Throws MasterKeyError when `from` is not the deployment's key (nor a
 * rotation from it to `to` is under way), or the file store cannot rewrite in place.
 */
export async function rotateMasterKey(meta: MetaStore, files: BlobStore, from: MasterKey, to: MasterKey): Promise<RotationReport> {
  const oldId = from.id.toString('hex');
  const newId = to.id.toString('hex');
  if (oldId === newId) throw new MasterKeyError(`the old and the new key files hold the same key (id ${oldId})`);
  if (!files.rewriteHead) throw new MasterKeyError('the blobs are in an S3 bucket, whose objects cannot be rewritten in place: rotation is not supported there yet; nothing was changed');
  const rotation = `${oldId}>${newId}`;
  const underway = (await meta.getSetting(ROTATION_SETTING)) ?? '';
  const recorded = await meta.getSetting(MASTER_KEY_SETTING);
  if (underway !== '' && underway !== rotation) {
    throw new MasterKeyError(`another rotation is under way (${underway}): run it again with its own two key files; nothing was changed`);
  }
  if (underway === '' && recorded !== oldId) {
    throw new MasterKeyError(`the old key file ${from.source} holds key ${oldId}, but this deployment's objects are encrypted with ${recorded ?? 'no key'}; nothing was changed`);
  }
  await meta.setSetting(ROTATION_SETTING, rotation);
  const report: RotationReport = { files: 0, inline: 0, alreadyNew: 0, unencrypted: 0 };
  /** The re-wrapped header of `head`, or undefined (not encrypted / already new: counted). */
  const rewrap = (head: Buffer): Buffer | undefined => {
    if (!hasMagic(head)) {
      report.unencrypted++;
      return undefined;
    }
    if (headerKeyId(head).equals(to.id)) {
      report.alreadyNew++;
      return undefined;
    }
    return rewrapHeader(head, [from], to);
  };
  for await (const { id } of files.list()) {
    const head = await collect(files.read(id, { start: 0, end: HEADER_BYTES - 1 }));
    const next = rewrap(head);
    if (!next) continue;
    await files.rewriteHead(id, next);
    report.files++;
  }
  for (let after = ''; ; ) {
    const ids = await meta.listInlineBlobIds(after, 500);
    for (const id of ids) {
      const data = await meta.inlineBlob(id);
      if (!data) continue;
      const next = rewrap(data);
      if (!next) continue;
      await meta.replaceInlineBlob(id, Buffer.concat([next, data.subarray(HEADER_BYTES)]));
      report.inline++;
    }
    if (ids.length < 500) break;
    after = ids[ids.length - 1]!;
  }
  await meta.setSetting(MASTER_KEY_SETTING, newId);
  await meta.setSetting(ROTATION_SETTING, '');
  return report;
}
