// Browser uploads with qiniu-js (form upload up to 4 MiB, resumable multipart v2 in 4 MiB parts above, resumed
// from localStorage after an interruption), with an upload token minted by the console API and sent to the Kodo
// API listener it names.
import * as qiniu from 'qiniu-js';
import { bucketPath, post } from './api';

export interface UploadProgress {
  name: string;
  key: string;
  percent: number;
  state: 'uploading' | 'done' | 'failed';
  error?: string;
}

/** Uploads `file` as `key` into `bucket`; `onProgress` gets the percentage (0–100). */
export async function uploadFile(bucket: string, key: string, file: File, onProgress: (percent: number) => void): Promise<void> {
  const { token, upHost } = await post<{ token: string; upHost: string }>(bucketPath(bucket, '/upload-token'), { key });
  const u = new URL(upHost);
  const config = {
    uphost: u.host,
    upprotocol: u.protocol === 'https:' ? 'https' : 'http',
    disableStatisticsReport: true,
    chunkSize: 4,
    concurrentRequestLimit: 3,
    checkByServer: true,
  } as unknown as Parameters<typeof qiniu.upload>[4];
  await new Promise<void>((resolve, reject) => {
    qiniu.upload(file, key, token, { fname: file.name }, config).subscribe({
      next: (res) => onProgress(res.total.percent),
      error: (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))),
      complete: () => resolve(),
    });
  });
}
