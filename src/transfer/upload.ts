/**
 * Putting one object on a remote (docs/development/kodo-protocol.md §4, §6): under 4 MiB a form upload through the official SDK
 * (`qiniu.form_up.FormUploader.putStream`, static Zone of the bucket's hosts); from 4 MiB on a resumable v2
 * (multipart, resumable-v2.ts) upload. The etag of the bytes read is computed on the way and compared with the
 * `hash` the server answers: a mismatch throws (the object is reported failed).
 */
import http from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import qiniu from 'qiniu';
import { BLOCK_SIZE } from '../objects/etag.js';
import type { KodoClient } from './client.js';
import { describeStatus, TransferError } from './errors.js';
import { EtagHasher } from './local-etag.js';
import { multipartUpload } from './resumable-v2.js';
import { checkHash, type ByteSource, type PutAttributes, type PutResult, type UploadOptions } from './upload-types.js';
import { throttled } from './throttle.js';

/**
 * Keep-alive agents for the SDK's uploads (its `conf.RPC_HTTP(S)_AGENT`; without them every form upload opens a
 * new connection, which costs the server more than the upload of a small file). Set once per process: the CLI
 * owns its process.
 */
function keepAliveAgents(): void {
  const conf = qiniu.conf as unknown as { RPC_HTTP_AGENT: http.Agent | null; RPC_HTTPS_AGENT: https.Agent | null };
  conf.RPC_HTTP_AGENT ??= new http.Agent({ keepAlive: true });
  conf.RPC_HTTPS_AGENT ??= new https.Agent({ keepAlive: true });
}

const configs = new Map<string, Promise<qiniu.conf.Config>>();

/** Static-Zone SDK configuration of `bucket` on `client` (no region query; one per remote and bucket). */
function sdkConfig(client: KodoClient, bucket: string): Promise<qiniu.conf.Config> {
  const id = `${client.name}\n${bucket}`;
  let c = configs.get(id);
  if (!c) {
    keepAliveAgents();
    c = client.hosts(bucket).then((h) => {
      const zone = new qiniu.conf.Zone([h.up], [], h.io, h.rs, h.rsf, h.api);
      return new qiniu.conf.Config({ zone, useHttpsDomain: h.scheme === 'https' } as qiniu.conf.ConfigOptions);
    });
    configs.set(id, c);
  }
  return c;
}

/** A pass-through that feeds `hasher` and reports bytes. */
function tap(hasher: EtagHasher, onBytes?: (n: number) => void): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hasher.update(chunk);
      onBytes?.(chunk.length);
      cb(null, chunk);
    },
  });
}

/** Form upload of a small source (< 4 MiB; the SDK holds it in memory to compute its CRC-32). */
async function formUpload(client: KodoClient, bucket: string, key: string, src: ByteSource, attrs: PutAttributes, opts: UploadOptions): Promise<PutResult> {
  const hasher = new EtagHasher();
  const chunks: Buffer[] = [];
  await pipeline(
    src.open(),
    throttled(opts.limiter),
    tap(hasher),
    new Transform({
      transform(chunk: Buffer, _enc, cb) {
        chunks.push(chunk);
        cb();
      },
    }),
  );
  const body = Buffer.concat(chunks);
  const uploader = new qiniu.form_up.FormUploader(await sdkConfig(client, bucket));
  const meta: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs.meta ?? {})) meta[`x-qn-meta-${k}`] = v;
  const extra = new qiniu.form_up.PutExtra(src.name, {}, attrs.mimeType ?? null!, undefined, true, meta);
  const token = client.uploadToken(bucket, key, attrs.fileType);
  let answer: { data: unknown; resp: { statusCode?: number } };
  try {
    answer = (await uploader.put(token, key, body, extra)) as unknown as typeof answer;
  } catch (err) {
    throw new TransferError(`remote ${client.name}: upload of ${bucket}:${key} failed (${(err as Error).message})`);
  }
  const status = answer.resp.statusCode ?? 0;
  if (status !== 200) throw new TransferError(describeStatus(status, JSON.stringify(answer.data ?? ''), `remote ${client.name}, ${bucket}:${key}`), status);
  opts.onBytes?.(body.length);
  return checkHash(client, bucket, key, (answer.data as { hash?: string } | null)?.hash, hasher.etag(), body.length);
}

/** Uploads `src` to `bucket:key` (form under 4 MiB, multipart from 4 MiB), verified by etag. */
export async function uploadObject(client: KodoClient, bucket: string, key: string, src: ByteSource, attrs: PutAttributes, opts: UploadOptions = {}): Promise<PutResult> {
  if (src.size < BLOCK_SIZE) return formUpload(client, bucket, key, src, attrs, opts);
  return multipartUpload(client, bucket, key, src, attrs, opts);
}
