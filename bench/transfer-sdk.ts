/**
 * The baseline of bench/transfer.ts: the official `qiniu` SDK called one file at a time, the way a simple script
 * would — `FormUploader.putFile` under 4 MiB, `ResumeUploader.putFile` (resumable v2, 4 MiB parts, its own
 * sequential part loop) from 4 MiB. Args: <dir> <host:port> <AccessKey> <SecretKey> <bucket> <key prefix>.
 * Prints `{"files","bytes","seconds"}` (seconds from before the first upload to after the last).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';

const [dir, host, ak, sk, bucket, prefix] = process.argv.slice(2) as [string, string, string, string, string, string];
const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
const config = new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
const mac = new qiniu.auth.digest.Mac(ak, sk);
const token = new qiniu.rs.PutPolicy({ scope: bucket, expires: 86_400 }).uploadToken(mac);
const form = new qiniu.form_up.FormUploader(config);
const resume = new qiniu.resume_up.ResumeUploader(config);

async function files(d: string, rel = ''): Promise<Array<{ path: string; key: string; size: number }>> {
  const out: Array<{ path: string; key: string; size: number }> = [];
  for (const e of (await readdir(join(d, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await files(d, r)));
    else out.push({ path: join(d, r), key: `${prefix}${r}`, size: (await stat(join(d, r))).size });
  }
  return out;
}

const list = await files(dir);
const t0 = performance.now();
let bytes = 0;
for (const f of list) {
  const r =
    f.size < 4 * 1024 * 1024
      ? await form.putFile(token, f.key, f.path, new qiniu.form_up.PutExtra())
      : await resume.putFile(token, f.key, f.path, new qiniu.resume_up.PutExtra(undefined, undefined, undefined, undefined, undefined, 4 * 1024 * 1024, 'v2'));
  if (r.resp.statusCode !== 200) throw new Error(`${f.key}: ${r.resp.statusCode} ${JSON.stringify(r.data)}`);
  bytes += f.size;
}
process.stdout.write(`${JSON.stringify({ files: list.length, bytes, seconds: (performance.now() - t0) / 1000 })}\n`);
