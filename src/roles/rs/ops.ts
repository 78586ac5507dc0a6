/**
 * The rs operations (docs/development/kodo-protocol.md §8.1) as op paths — `/stat/<EncodedEntryURI>`, `/copy/<src>/<dst>/force/true`,
 * `/chgm/<entry>/mime/<b64>/x-qn-meta-<name>/<b64>/cond/<b64>`, `/chstatus/<entry>/status/<s>/cond/<b64>`, … —
 * `cond` (`hash=&mime=&fsize=&putTime=`, 608 on mismatch) on delete, chgm, chtype, chstatus, deleteAfterDays and
 * lifecycle — shared by the single-op routes and batch.
 * Parsing names every entry an op touches; `runOp` authorises each of their buckets for the caller (631 / 403)
 * through the route table's helper (`call.authorize`, http/route-call.ts) before the domain function runs. Answers: the stat object for stat, nothing for the others.
 */
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import type { EventActor } from '../../events/outbox.js';
import { parseCond, type Cond } from '../../objects/manage/cond.js';
import { copyEntry, moveEntry } from '../../objects/manage/copy.js';
import { deleteEntry } from '../../objects/manage/delete.js';
import type { EntryRef } from '../../objects/manage/ref.js';
import { statEntry } from '../../objects/manage/stat.js';
import {
  changeMeta,
  changeStatus,
  changeType,
  restoreArchive,
  setDeleteAfterDays,
  setLifecycle,
} from '../../objects/manage/update.js';
import type { RouteCall } from '../../http/route-call.js';
import { rsOpAction } from '../../iam/operation-actions.js';
import { decodeEntry, decodeEntryTarget, decodeParam, pathSegments } from '../../objects/manage/encoded-entry.js';

/**
 * A parsed op: its name (its IAM action: iam/operation-actions.ts), the entries it touches and how to run it (`by`:
 * the caller, named in event notifications).
 */
interface ParsedOp {
  name?: string;
  entries: EntryRef[];
  run(g: Granary, by: EventActor): Promise<unknown>;
}

type OpParser = (args: string[], query: URLSearchParams) => ParsedOp;

/** `name/value` pairs after the fixed arguments. */
function pairs(args: string[], from: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = from; i < args.length; i += 2) {
    const value = args[i + 1];
    if (value === undefined) throw Errors.badRequest(`parameter ${args[i]} has no value`);
    out.push([args[i] as string, value]);
  }
  return out;
}

/** 400 when anything follows the op's fixed arguments (a destructive op must not run with arguments it ignores). */
function noMoreArgs(args: string[], count: number): void {
  if (args.length > count) throw Errors.badRequest(`unexpected parameter ${args[count]}`);
}

/**
 * The optional `/cond/<b64>` pair after an op's fixed arguments (Kodo's condition on chstatus, chtype, delete,
 * deleteAfterDays, as on chgm and lifecycle): undefined when absent; 400 for anything else after the fixed ones.
 */
function condAfter(args: string[], count: number): Cond | undefined {
  if (args.length <= count) return undefined;
  if (args[count] !== 'cond' || args.length !== count + 2) throw Errors.badRequest(`unexpected parameter ${args[count]}`);
  return parseCond(decodeParam(args[count + 1], 'cond'));
}

/**
 * The entry of a delete: an EncodedEntryURI naming only a bucket (no `:`) answers 631 `no such bucket`, as Kodo
 * does whether the bucket exists or not (the Java SDK's BucketTest.testDelete); otherwise as `decodeEntry`.
 */
function decodeKeyedEntry(encoded: string | undefined): EntryRef {
  const target = decodeEntryTarget(encoded);
  if (target.key === undefined) throw Errors.noKeyInDelete(`${target.bucket} (the entry names no key)`);
  return { bucket: target.bucket, key: target.key };
}

function intArg(text: string | undefined, what: string): number {
  if (text === undefined || !/^-?\d+$/.test(text)) throw Errors.badRequest(`${what} must be an integer`);
  return Number(text);
}

/** `force/true` (or `force/false`) after a copy/move. */
function forceFlag(args: string[], from: number): boolean {
  let force = false;
  for (const [name, value] of pairs(args, from)) {
    if (name !== 'force') throw Errors.badRequest(`unknown parameter ${name}`);
    force = value === 'true' || value === '1';
  }
  return force;
}

function copyLike(fn: typeof copyEntry): OpParser {
  return (args) => {
    const from = decodeEntry(args[0]);
    const to = decodeEntry(args[1]);
    const force = forceFlag(args, 2);
    // The Kodo answer of copy and move is empty whatever the domain answers (a version id).
    return {
      entries: [from, to],
      run: async (g, by) => {
        await fn(g, from, to, force, by);
      },
    };
  };
}

const OPS: Record<string, OpParser> = {
  stat: (args, query) => {
    const ref = decodeEntry(args[0]);
    const needParts = query.get('needparts') === 'true' || pairs(args, 1).some(([n, v]) => n === 'needparts' && v === 'true');
    return { entries: [ref], run: (g) => statEntry(g, ref, needParts) };
  },
  delete: (args) => {
    const ref = decodeKeyedEntry(args[0]);
    const cond = condAfter(args, 1);
    return {
      entries: [ref],
      run: async (g, by) => {
        await deleteEntry(g, ref, by, cond);
      },
    };
  },
  copy: copyLike(copyEntry),
  move: copyLike(moveEntry),
  chgm: (args) => {
    const ref = decodeEntry(args[0]);
    const change: Parameters<typeof changeMeta>[2] = { meta: {} };
    for (const [name, value] of pairs(args, 1)) {
      if (name === 'mime') change.mimeType = decodeParam(value, 'mime');
      else if (name === 'cond') change.cond = parseCond(decodeParam(value, 'cond'));
      else if (name.toLowerCase().startsWith('x-qn-meta-')) {
        change.meta[name.slice('x-qn-meta-'.length)] = decodeParam(value, name);
      } else throw Errors.badRequest(`unknown chgm parameter ${name}`);
    }
    return { entries: [ref], run: (g) => changeMeta(g, ref, change) };
  },
  chtype: (args) => {
    const ref = decodeEntry(args[0]);
    if (args[1] !== 'type') throw Errors.badRequest('expected /type/<n>');
    const type = intArg(args[2], 'type');
    const cond = condAfter(args, 3);
    return { entries: [ref], run: (g) => changeType(g, ref, type, cond) };
  },
  chstatus: (args) => {
    const ref = decodeEntry(args[0]);
    if (args[1] !== 'status') throw Errors.badRequest('expected /status/<0|1>');
    const status = intArg(args[2], 'status');
    const cond = condAfter(args, 3);
    return { entries: [ref], run: (g, by) => changeStatus(g, ref, status, by, cond) };
  },
  deleteAfterDays: (args) => {
    const ref = decodeEntry(args[0]);
    const days = intArg(args[1], 'days');
    const cond = condAfter(args, 2);
    return { entries: [ref], run: (g) => setDeleteAfterDays(g, ref, days, cond) };
  },
  lifecycle: (args) => {
    const ref = decodeEntry(args[0]);
    const days = { toIA: 0, toIntelligentTiering: 0, toArchiveIR: 0, toArchive: 0, toDeepArchive: 0, deleteAfter: 0 };
    let cond: Cond | undefined;
    const names: Record<string, keyof typeof days> = {
      toIAAfterDays: 'toIA',
      toIntelligentTieringAfterDays: 'toIntelligentTiering',
      toArchiveIRAfterDays: 'toArchiveIR',
      toArchiveAfterDays: 'toArchive',
      toDeepArchiveAfterDays: 'toDeepArchive',
      deleteAfterDays: 'deleteAfter',
    };
    for (const [name, value] of pairs(args, 1)) {
      const field = names[name];
      if (field) days[field] = intArg(value, name);
      else if (name === 'cond') cond = parseCond(decodeParam(value, 'cond'));
      else throw Errors.badRequest(`unknown lifecycle parameter ${name}`);
    }
    return { entries: [ref], run: (g) => setLifecycle(g, ref, days, cond) };
  },
  restoreAr: (args) => {
    const ref = decodeEntry(args[0]);
    if (args[1] !== 'freezeAfterDays') throw Errors.badRequest('expected /freezeAfterDays/<1..7>');
    const days = intArg(args[2], 'freezeAfterDays');
    noMoreArgs(args, 3);
    return { entries: [ref], run: (g, by) => restoreArchive(g, ref, days, by) };
  },
};

/** The op names (first path segment of each single-op route). */
export const OP_NAMES = Object.keys(OPS);

/** Splits `/name/arg/arg…` (leading slash optional) and parses it; 400 for an unknown op or bad arguments. */
export function parseOp(path: string, query: URLSearchParams = new URLSearchParams()): ParsedOp {
  const segments = pathSegments(path.startsWith('/') ? path : `/${path}`);
  const name = segments[0] ?? '';
  const parser = Object.hasOwn(OPS, name) ? OPS[name] : undefined;
  if (!parser) throw Errors.unknownOp(name);
  return { ...parser(segments.slice(1), query), name };
}

/**
 * Authorises every entry the op touches for the caller with the op's IAM action (`call.authorize`: 631 / 403; a
 * sub-user's policies decide on each bucket/key: copy and move on the source and the target), then runs it.
 * Returns the op's answer (stat) or undefined. `reqId`: the request's X-Reqid (named in event notifications).
 */
export async function runOp(call: RouteCall<Granary, Caller>, op: ParsedOp, reqId?: string): Promise<unknown> {
  const action = rsOpAction(op.name ?? '');
  if (action === undefined) throw Errors.internal(`op ${op.name ?? '?'} has no IAM action`);
  // The root key and account owners: one look per bucket, as before; sub-users: every entry's key.
  const perKey = call.g.keyIndex.isSubUser(call.caller.accessKey);
  const seen = new Set<string>();
  for (const e of op.entries) {
    const id = perKey ? `${e.bucket}\u0000${e.key}` : e.bucket;
    if (seen.has(id)) continue;
    seen.add(id);
    await call.authorize(e.bucket, perKey ? { action, key: e.key } : { action });
  }
  return op.run(call.g, { accessKey: call.caller.accessKey, ...(reqId ? { reqId } : {}) });
}
