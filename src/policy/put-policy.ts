/**
 * The put policy (upload policy) carried in an upload token: parsing and the checks that depend on the policy alone
 * (docs/development/kodo-protocol.md §2.4, §3.1). Lenient on input — numbers may come as numeric strings, booleans as 0/1/true/false,
 * unknown fields are ignored — and strict on meaning: any contradiction is `Errors.badPutPolicy` (400).
 *
 * Zero and empty values mean "not set" for optional fields (`fsizeLimit: 0`, `trafficLimit: 0`, `saveKey: ""`…):
 * Qiniu's server decodes the policy into Go structs where the zero value is indistinguishable from absence, and
 * older SDKs (e.g. C#) serialise every field with its zero default.
 */
import { Errors } from '../errors.js';
import { validateJsonTemplate } from './template.js';

/** A parsed, validated put policy. Optional fields are absent when the token did not set them. */
export interface PutPolicy {
  /** The `scope` text as sent: `bucket`, `bucket:key` or `bucket:prefix` (with `isPrefixalScope`). */
  scope: string;
  /** Bucket part of the scope (before the first `:`); never empty. */
  bucket: string;
  /** Key part of the scope (after the first `:`); absent for a bucket-only scope; `""` for `"b:"`. */
  scopeKey?: string;
  /** `isPrefixalScope` non-zero: `scopeKey` is a key prefix rather than an exact key. */
  isPrefixalScope: boolean;
  /** Token expiry, Unix seconds (uint32). */
  deadline: number;
  /** `insertOnly` non-zero. */
  insertOnly: boolean;
  endUser?: string;
  returnUrl?: string;
  returnBody?: string;
  /** One or more URLs separated by `;`. When set, `callbackBody` is set too. */
  callbackUrl?: string;
  callbackHost?: string;
  callbackBody?: string;
  callbackBodyType?: string;
  /** `callbackFetchKey` non-zero. */
  callbackFetchKey: boolean;
  persistentOps?: string;
  persistentNotifyUrl?: string;
  persistentPipeline?: string;
  /** 0 normal, 1 idle-time. */
  persistentType: number;
  persistentWorkflowTemplateID?: string;
  saveKey?: string;
  /** When true, `saveKey` is set (non-empty). */
  forceSaveKey: boolean;
  /** Bytes; absent when 0/unset. */
  fsizeMin?: number;
  /** Bytes; absent when 0/unset. */
  fsizeLimit?: number;
  /** Normalised to -1 (trust client), 0 (default) or 1 (sniff content). */
  detectMime: number;
  mimeLimit?: string;
  /** 0 standard, 1 IA, 2 archive, 3 deep archive, 4 archive-IR. */
  fileType: number;
  /** Days (≥ 1); absent when 0/unset. */
  deleteAfterDays?: number;
  /** Bits per second within 819200–838860800; absent when 0/unset. */
  trafficLimit?: number;
  /** Allowed keys; absent when unset or empty. */
  keylimit?: string[];
}

const TRAFFIC_LIMIT_MIN = 819_200;
const TRAFFIC_LIMIT_MAX = 838_860_800;
const UINT32_MAX = 0xffff_ffff;

function invalid(field: string, why: string): never {
  throw Errors.badPutPolicy(`${field} ${why}`);
}

const isUnset = (v: unknown): boolean => v === undefined || v === null;

/** Optional string; numbers are accepted and stringified; `""` counts as unset. */
function optString(raw: Record<string, unknown>, field: string): string | undefined {
  const v = raw[field];
  if (isUnset(v)) return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string') invalid(field, 'must be a string');
  return v === '' ? undefined : v;
}

/** Optional integer: a JSON integer or a decimal-integer string (surrounding spaces allowed). `""` counts as unset. */
function optInt(raw: Record<string, unknown>, field: string): number | undefined {
  const v = raw[field];
  if (isUnset(v)) return undefined;
  let n: number;
  if (typeof v === 'number') {
    n = v;
  } else if (typeof v === 'string') {
    const t = v.trim();
    if (t === '') return undefined;
    if (!/^[-+]?\d+$/.test(t)) invalid(field, 'must be an integer');
    n = Number(t);
  } else {
    invalid(field, 'must be an integer');
  }
  if (!Number.isSafeInteger(n)) invalid(field, 'must be an integer');
  return n;
}

/** Optional boolean: true/false, any integer (non-zero = true) or the strings "true"/"false"/"<integer>". */
function optBool(raw: Record<string, unknown>, field: string): boolean | undefined {
  const v = raw[field];
  if (isUnset(v)) return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return v !== 0;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (t === '') return undefined;
    if (t === 'true') return true;
    if (t === 'false') return false;
    if (/^[-+]?\d+$/.test(t)) return Number(t) !== 0;
  }
  invalid(field, 'must be a boolean (true/false/0/1)');
}

/** Optional non-negative integer where 0 means unset. */
function optPositive(raw: Record<string, unknown>, field: string): number | undefined {
  const n = optInt(raw, field);
  if (n === undefined) return undefined;
  if (n < 0) invalid(field, 'must not be negative');
  return n === 0 ? undefined : n;
}

/** `o` without its `undefined` properties (so unset policy fields are absent, not present-and-undefined). */
function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `true` when a `callbackBodyType` means a JSON body (`application/json`, parameters ignored). */
export function isJsonBodyType(type: string | undefined): boolean {
  return (type?.split(';')[0] ?? '').trim().toLowerCase() === 'application/json';
}

/**
 * Parses the decoded policy JSON of an upload token (docs/development/kodo-protocol.md §3.1).
 *
 * Rules: `scope` required, non-empty, split on the **first** `:` (bucket must be non-empty; `"b:"` → key `""`);
 * `deadline` required, positive integer ≤ 2^32−1; `forceSaveKey: true` needs a non-empty `saveKey`;
 * `callbackUrl` needs a non-empty `callbackBody`; `trafficLimit` within 819200–838860800 (0 = unset);
 * `fileType` 0..5 (5: Intelligent Tiering); `persistentType` 0/1; `detectMime` -1, 0 or positive (normalised to 1); `persistentOps` not
 * with `fileType` 2/3, nor together with `persistentWorkflowTemplateID`; sizes and `deleteAfterDays` not negative;
 * `fsizeMin` ≤ `fsizeLimit`; `keylimit` an array of strings; a JSON `callbackBody` must render to valid JSON
 * (`returnBody` need not: it is answered as rendered).
 *
 * @throws `Errors.badPutPolicy` (400) naming the field and the reason.
 */
export function parsePutPolicy(raw: Record<string, unknown>): PutPolicy {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) invalid('policy', 'must be a JSON object');

  const scope = raw.scope;
  if (typeof scope !== 'string' || scope === '') invalid('scope', 'is required');
  const colon = scope.indexOf(':');
  const bucket = colon < 0 ? scope : scope.slice(0, colon);
  const scopeKey = colon < 0 ? undefined : scope.slice(colon + 1);
  if (bucket === '') invalid('scope', 'has an empty bucket');

  const deadline = optInt(raw, 'deadline');
  if (deadline === undefined) invalid('deadline', 'is required');
  if (deadline <= 0 || deadline > UINT32_MAX) invalid('deadline', 'must be positive Unix seconds (uint32)');

  const saveKey = optString(raw, 'saveKey');
  const forceSaveKey = optBool(raw, 'forceSaveKey') ?? false;
  if (forceSaveKey && saveKey === undefined) invalid('forceSaveKey', 'requires a non-empty saveKey');

  const callbackUrl = optString(raw, 'callbackUrl');
  const callbackBody = optString(raw, 'callbackBody');
  const callbackBodyType = optString(raw, 'callbackBodyType');
  if (callbackUrl !== undefined && callbackBody === undefined) {
    invalid('callbackUrl', 'requires a non-empty callbackBody');
  }

  const fileType = optInt(raw, 'fileType') ?? 0;
  if (fileType < 0 || fileType > 5) invalid('fileType', 'must be 0..5');

  const persistentType = optInt(raw, 'persistentType') ?? 0;
  if (persistentType !== 0 && persistentType !== 1) invalid('persistentType', 'must be 0 or 1');

  const detectMimeRaw = optInt(raw, 'detectMime') ?? 0;
  if (detectMimeRaw < -1) invalid('detectMime', 'must be -1, 0 or 1');
  const detectMime = detectMimeRaw > 0 ? 1 : detectMimeRaw;

  const persistentOps = optString(raw, 'persistentOps');
  const persistentWorkflowTemplateID = optString(raw, 'persistentWorkflowTemplateID');
  if (persistentOps !== undefined && (fileType === 2 || fileType === 3)) {
    invalid('persistentOps', `is not allowed with fileType ${fileType}`);
  }
  if (persistentOps !== undefined && persistentWorkflowTemplateID !== undefined) {
    invalid('persistentOps', 'conflicts with persistentWorkflowTemplateID');
  }

  const fsizeMin = optPositive(raw, 'fsizeMin');
  const fsizeLimit = optPositive(raw, 'fsizeLimit');
  if (fsizeMin !== undefined && fsizeLimit !== undefined && fsizeMin > fsizeLimit) {
    invalid('fsizeMin', 'is larger than fsizeLimit');
  }
  const deleteAfterDays = optPositive(raw, 'deleteAfterDays');

  const trafficLimit = optPositive(raw, 'trafficLimit');
  if (trafficLimit !== undefined && (trafficLimit < TRAFFIC_LIMIT_MIN || trafficLimit > TRAFFIC_LIMIT_MAX)) {
    invalid('trafficLimit', `must be within ${TRAFFIC_LIMIT_MIN}-${TRAFFIC_LIMIT_MAX}`);
  }

  let keylimit: string[] | undefined;
  if (!isUnset(raw.keylimit)) {
    const list = raw.keylimit;
    if (!Array.isArray(list) || !list.every((k): k is string => typeof k === 'string')) {
      invalid('keylimit', 'must be an array of strings');
    }
    keylimit = list.length > 0 ? [...list] : undefined;
  }

  // returnBody may render to text that is not JSON: it is answered as rendered (objects/upload-response.ts).
  const returnBody = optString(raw, 'returnBody');
  if (callbackBody !== undefined && isJsonBodyType(callbackBodyType)) validateJsonTemplate(callbackBody, 'callbackBody');

  const required: PutPolicy = {
    scope,
    bucket,
    isPrefixalScope: optBool(raw, 'isPrefixalScope') ?? false,
    deadline,
    insertOnly: optBool(raw, 'insertOnly') ?? false,
    callbackFetchKey: optBool(raw, 'callbackFetchKey') ?? false,
    persistentType,
    forceSaveKey,
    detectMime,
    fileType,
  };
  return {
    ...required,
    ...definedOnly({
      scopeKey,
      endUser: optString(raw, 'endUser'),
      returnUrl: optString(raw, 'returnUrl'),
      returnBody,
      callbackUrl,
      callbackHost: optString(raw, 'callbackHost'),
      callbackBody,
      callbackBodyType,
      persistentOps,
      persistentNotifyUrl: optString(raw, 'persistentNotifyUrl'),
      persistentPipeline: optString(raw, 'persistentPipeline'),
      persistentWorkflowTemplateID,
      saveKey,
      fsizeMin,
      fsizeLimit,
      mimeLimit: optString(raw, 'mimeLimit'),
      deleteAfterDays,
      trafficLimit,
      keylimit,
    }),
  };
}

/**
 * Deadline check (docs/development/kodo-protocol.md §3.1): run when the object is **created** (end of form upload, mkfile, v2 complete),
 * not when the upload starts. `nowSeconds` is Unix seconds; a deadline equal to now is still valid.
 * @throws `Errors.expiredToken` (401) when `policy.deadline < nowSeconds`.
 */
export function checkDeadline(policy: PutPolicy, nowSeconds: number): void {
  if (policy.deadline < nowSeconds) throw Errors.expiredToken();
}

/**
 * Size limits (docs/development/kodo-protocol.md §3.1): `fsize` in bytes.
 * @throws `Errors.fileTooSmall` (403) when below `fsizeMin`; `Errors.fileTooLarge` (413) when above `fsizeLimit`.
 */
export function checkSizeLimits(policy: PutPolicy, fsize: number): void {
  if (policy.fsizeMin !== undefined && fsize < policy.fsizeMin) throw Errors.fileTooSmall();
  if (policy.fsizeLimit !== undefined && fsize > policy.fsizeLimit) throw Errors.fileTooLarge();
}
