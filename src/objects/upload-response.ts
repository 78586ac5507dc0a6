/**
 * The answer to a successful upload, shared by every upload kind (docs/development/kodo-protocol.md §3.3, §3.4, §4.2, §4.3):
 * - callbackUrl set → POST the rendered callbackBody to the application; its JSON is relayed (579 on failure,
 *   the object is kept); with callbackFetchKey the answer also names the final key (fetch-key.ts);
 * - else returnBody rendered (answered as rendered, as `text/plain; charset=utf-8` when it is not JSON), or the
 *   default body `{"hash","key", x: vars…, "persistentId"?}`;
 * - returnUrl set → 303 with `Location: <returnUrl>?upload_ret=<urlsafe_b64(body)>`.
 */
import { createHash, randomUUID } from 'node:crypto';
import { urlsafeB64Encode } from '../auth/base64.js';
import type { Granary } from '../context.js';
import { isJsonText, renderFormTemplate, renderJsonTemplate, renderJsonTemplateText, type UploadVars } from '../policy/template.js';
import type { PutPolicy } from '../policy/put-policy.js';
import { runUploadCallback } from './callback.js';
import { applyFetchKey } from './fetch-key.js';
import type { PutResult } from './put-object.js';

/** An HTTP answer described without HTTP-framework types: status, extra headers and a text body. */
export interface UploadAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON text ('' for none), or a rendered returnBody that is not JSON (see `contentType`). */
  body: string;
  /**
   * The Content-Type of a body that is not JSON: `text/plain; charset=utf-8` for a returnBody that renders to
   * text that does not parse (undefined: `application/json`).
   */
  contentType?: string;
}

/** Content-Type of a rendered returnBody that is not JSON (docs/reference/sdk-wire-notes.md). */
export const NON_JSON_RETURN_BODY_TYPE = 'text/plain; charset=utf-8';

/** The magic and custom variables of a committed upload (docs/development/kodo-protocol.md §3.2). */
export function uploadVars(result: PutResult): UploadVars {
  const r = result.record;
  const vars: UploadVars = {
    bucket: r.bucket,
    key: r.key,
    etag: r.hash,
    fname: result.fname,
    fsize: r.fsize,
    mimeType: r.mimeType,
    custom: result.custom,
    putTimeMs: Number(r.putTime / 10000n),
    uuid: () => randomUUID(),
  };
  if (r.endUser !== undefined) vars.endUser = r.endUser;
  if (result.persistentId !== undefined) vars.persistentId = result.persistentId;
  return vars;
}

/** The default response body (§3.4): hash, key, every x: variable, persistentId when processing was queued. */
function defaultBody(result: PutResult): string {
  const body: Record<string, string> = { hash: result.record.hash, key: result.record.key };
  for (const [name, value] of Object.entries(result.custom)) body[name] = value;
  if (result.persistentId !== undefined) body.persistentId = result.persistentId;
  return JSON.stringify(body);
}

/** The key pair that signs callbacks: the upload token's own (the application verifies with it). */
function callbackKeys(g: Granary, accessKey: string): { accessKey: string; secretKey: string } {
  return g.keyIndex.pairOf(accessKey) ?? g.keys;
}

/** Builds the success answer; runs the upload callback when the policy has one (throws 579 when it fails). */
export async function answerUpload(g: Granary, policy: PutPolicy, result: PutResult): Promise<UploadAnswer> {
  const vars = uploadVars(result);
  let body: string;
  if (policy.callbackUrl) {
    const bodyType = policy.callbackBodyType?.toLowerCase().startsWith('application/json')
      ? 'application/json'
      : 'application/x-www-form-urlencoded';
    const render = bodyType === 'application/json' ? renderJsonTemplate : renderFormTemplate;
    const firstPass = render(policy.callbackBody ?? '', vars);
    const callbackBody = /\$\(bodySha1\)/.test(policy.callbackBody ?? '')
      ? render(policy.callbackBody ?? '', { ...vars, bodySha1: createHash('sha1').update(firstPass).digest('hex') })
      : firstPass;
    const answer = await runUploadCallback({
      callbackUrl: policy.callbackUrl,
      ...(policy.callbackHost ? { callbackHost: policy.callbackHost } : {}),
      body: callbackBody,
      bodyType,
      ...callbackKeys(g, result.accessKey),
      policy: g.outbound,
      timeoutMs: g.config.callbackTimeoutSeconds * 1000,
      maxBodyBytes: 1024 * 1024,
    });
    body = JSON.stringify(policy.callbackFetchKey ? await applyFetchKey(g, policy, result, answer.json) : answer.json);
  } else if (policy.returnBody) {
    body = renderJsonTemplateText(policy.returnBody, vars);
  } else {
    body = defaultBody(result);
  }
  if (policy.returnUrl) {
    const sep = policy.returnUrl.includes('?') ? '&' : '?';
    return {
      status: 303,
      headers: { location: `${policy.returnUrl}${sep}upload_ret=${urlsafeB64Encode(body)}` },
      body: '',
    };
  }
  return isJsonText(body) || policy.callbackUrl
    ? { status: 200, headers: {}, body }
    : { status: 200, headers: {}, body, contentType: NON_JSON_RETURN_BODY_TYPE };
}
