/**
 * Calls of the Kodo IAM API (`/iam/v1/…`, docs/reference/iam.md) as Qiniu's go-sdk `iam/apis` sends them: a JSON
 * body when there is one, an `X-Qiniu-Date` header, signed `Qiniu <ak>:<sign>` — for checking from outside what the
 * console and the CLI did.
 */
import qiniu from 'qiniu';
import { expect } from 'vitest';
import { qiniuDate } from './http.js';
import type { TestServer } from './server.js';
import { readAnswer, type RawAnswer } from './upload.js';

/** One IAM call to `s` signed with `pair`; the raw answer. */
export async function iamCall(s: TestServer, pair: { accessKey: string; secretKey: string }, method: string, path: string, body?: unknown): Promise<RawAnswer> {
  const url = `${s.url}${path}`;
  const text = body === undefined ? undefined : JSON.stringify(body);
  const contentType = text === undefined ? 'application/x-www-form-urlencoded' : 'application/json';
  const date = qiniuDate(new Date(s.clock.nowMs()));
  const mac = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
  const headers: Record<string, string> = { 'Content-Type': contentType, 'X-Qiniu-Date': date };
  headers.Authorization = qiniu.util.generateAccessTokenV2(mac, url, method, contentType, text, { 'X-Qiniu-Date': date });
  return readAnswer(await fetch(url, { method, headers, ...(text !== undefined ? { body: text } : {}) }));
}

/** The `data` of a 200 answer of an IAM call. */
export async function iamData<T = Record<string, unknown>>(s: TestServer, pair: { accessKey: string; secretKey: string }, path: string): Promise<T> {
  const a = await iamCall(s, pair, 'GET', path);
  expect(a.status, a.text).toBe(200);
  return (a.json as { data: T }).data;
}

/** The aliases of a list answer's `list`. */
export const aliasesOf = (page: { list: Array<{ alias: string }> }): string[] => page.list.map((x) => x.alias);
