/**
 * Resume records of multipart uploads (resumable-v2.ts): after each part, the record (uploadId, expireAt, part etags)
 * is written under the configuration directory (records/<sha1 of remote, bucket, key, file size and mtime>.json),
 * removed once the object is committed; records past their expireAt are swept on the first use in a run.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where resume records live (a directory; created on first use, mode 0700). */
export class ResumeRecords {
  private swept: Promise<void> | undefined;

  constructor(readonly dir: string) {}

  /** Removes every record past its uploadId's expireAt (once per run; errors ignored: records are a cache). */
  sweep(nowSeconds = Date.now() / 1000): Promise<void> {
    this.swept ??= (async () => {
      const names = await readdir(this.dir).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.endsWith('.json'))) {
        const file = join(this.dir, name);
        const rec = await readFile(file, 'utf8').then((t) => JSON.parse(t) as Partial<UploadRecord>, () => undefined);
        if (!rec || typeof rec.expireAt !== 'number' || rec.expireAt <= nowSeconds) await rm(file, { force: true });
      }
    })();
    return this.swept;
  }

  /** File name of the record for an upload. */
  fileOf(id: string): string {
    return join(this.dir, `${createHash('sha1').update(id).digest('hex')}.json`);
  }

  async read(id: string): Promise<UploadRecord | undefined> {
    await this.sweep();
    try {
      return JSON.parse(await readFile(this.fileOf(id), 'utf8')) as UploadRecord;
    } catch {
      return undefined;
    }
  }

  async write(id: string, rec: UploadRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.fileOf(id);
    // One temp name per record (writes of one record are serialised): a leftover of a kill is overwritten next time.
    const tmp = `${file}.tmp`;
    await writeFile(tmp, JSON.stringify(rec), { mode: 0o600 });
    await rename(tmp, file);
  }

  async remove(id: string): Promise<void> {
    await rm(this.fileOf(id), { force: true });
  }
}

/** A resume record: the multipart session and the parts already stored (part number → etag). */
export interface UploadRecord {
  uploadId: string;
  /** Unix seconds. */
  expireAt: number;
  parts: Record<string, string>;
}
