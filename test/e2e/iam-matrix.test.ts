/**
 * The IAM permission matrix (docs/reference/iam.md "Enforcement"): sub-users created through the Kodo IAM
 * API with policies — read-only on one bucket, upload-only on a prefix, everything but delete (a Deny), and the
 * read-only policy inherited from a group — and the root key, × every route of the route tables × both doors:
 * - the Kodo door: every management route of the Kodo table (src/routes/), walked — a route without a request
 *   builder here fails the test — signed with the user's key (`Qiniu` token, as the SDKs sign), plus the qiniu
 *   SDK's form upload with a sub-user's upload token and a private download URL signed by a sub-user's key;
 * - the console: every session route of the console table, walked likewise, signed in with the user's key pair;
 * - the S3 door: every row of the S3 table (src/s3api/routes.ts), walked likewise, signed with SigV4, plus the AWS
 *   SDK v3 for the common calls.
 * Each answer must be what the policy says: refused (Kodo 403 JSON / S3 AccessDenied) where the evaluator
 * (src/iam/evaluate.ts) refuses the route's declared action on the request's bucket/key, never refused where it
 * allows (the answer may still be a 4xx of the request's own, never 401/403). 0 escapes.
 * Plus: refusals are in the audits API and the `/metrics` counter; a disabled key is refused at once.
 * The cross-worker case (a key disabled through one worker refused by the other within a second) is
 * test/e2e/iam-workers.test.ts.
 */
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluate, type Principal } from '../../src/iam/evaluate.js';
import { kodoActionOfS3 } from '../../src/iam/operation-actions.js';
import { storedStatements } from '../../src/iam/policy.js';
import { accountUid } from '../../src/iam/ids.js';
import { CONSOLE_ROUTES, KODO_ROUTES } from '../../src/routes/table.js';
import type { RouteEntry } from '../../src/routes/types.js';
import { ROUTES as S3_ROUTES, type S3Route } from '../../src/s3api/routes.js';
import { ConsoleClient } from '../helpers/console.js';
import { qiniuDate } from '../helpers/http.js';
import { codeOf, errorCode, payloadHash, rawRequest, s3Client, signV2, signV4 } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { readAnswer, type RawAnswer } from '../helpers/upload.js';

const B = 'mx-main';
const OTHER = 'mx-other';

/** The policies of the matrix (statements as the IAM API takes them). */
const POLICIES: Record<string, Array<{ action: string[]; resource: string[]; effect: string }>> = {
  readonly: [{ action: ['kodo/Get', 'kodo/Stat', 'kodo/List'], resource: [`qrn:kodo:::${B}`, `qrn:kodo:::${B}/*`], effect: 'Allow' }],
  uploadprefix: [{ action: ['kodo/Upload', 'kodo/Mkfile'], resource: [`qrn:kodo:::${B}/up/*`], effect: 'Allow' }],
  nodelete: [
    { action: ['kodo/*'], resource: [`qrn:kodo:::${B}`, `qrn:kodo:::${B}/*`], effect: 'Allow' },
    { action: ['kodo/Delete'], resource: [`qrn:kodo:::${B}/*`], effect: 'Deny' },
  ],
};

interface User {
  name: string;
  mac: qiniu.auth.digest.Mac;
  /** The principal as the evaluator sees it (undefined: the root key). */
  principal?: Principal;
}

let s: TestServer;
let root: User;
const users: User[] = [];

/** A request signed as go-sdk / the Node SDK sign management calls (`Qiniu` token, X-Qiniu-Date). */
async function kodo(mac: qiniu.auth.digest.Mac, method: string, path: string, body?: string, contentType = 'application/x-www-form-urlencoded'): Promise<RawAnswer> {
  const url = `${s.url}${path}`;
  const date = qiniuDate(new Date(s.clock.nowMs()));
  const headers: Record<string, string> = { 'Content-Type': contentType, 'X-Qiniu-Date': date };
  headers.Authorization = qiniu.util.generateAccessTokenV2(mac, url, method, contentType, body, { 'X-Qiniu-Date': date });
  return readAnswer(await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) }));
}

/** An IAM API call with the root key; its `data`. */
async function iam(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const a = await kodo(root.mac, method, `/iam/v1${path}`, body === undefined ? undefined : JSON.stringify(body), body === undefined ? 'application/x-www-form-urlencoded' : 'application/json');
  expect(a.status, a.text).toBe(200);
  return ((a.json as { data?: Record<string, unknown> } | null)?.data ?? {}) as Record<string, unknown>;
}

const enc = (bucket: string, key?: string): string => qiniu.util.urlsafeBase64Encode(key === undefined ? bucket : `${bucket}:${key}`);

/** Puts `key` into `bucket` with the root key (state a probe needs). */
async function seed(bucket: string, key: string): Promise<void> {
  const token = new qiniu.rs.PutPolicy({ scope: `${bucket}:${key}` }).uploadToken(root.mac);
  const a = await readAnswer(
    await fetch(`${s.url}/putb64/-1/key/${qiniu.util.urlsafeBase64Encode(key)}`, {
      method: 'POST',
      headers: { Authorization: `UpToken ${token}`, 'Content-Type': 'application/octet-stream' },
      body: Buffer.from('hello').toString('base64'),
    }),
  );
  expect(a.status, a.text).toBe(200);
}

/** What a probe asks: the request, and the bucket/key/action it is judged on (default: the route's action). */
interface Probe {
  method?: string;
  path: string;
  body?: string;
  contentType?: string;
  bucket: string;
  key?: string;
  prefix?: string;
  /** The action the answer is judged on, when not the route's (copy: the source's and the target's). */
  actions?: string[];
  /** State to make (with the root key) before the request. */
  before?: () => Promise<void>;
}

let n = 0;
const fresh = (prefix = 'k'): string => `${prefix}${++n}.txt`;

/** The request builders of the Kodo management routes, by operation (a route without one fails the walk). */
const KODO_PROBES: Record<string, () => Probe> = {
  'uc.drop': () => {
    const bucket = `mx-drop-${++n}`;
    return { path: `/drop/${bucket}`, bucket, before: async () => void expect((await kodo(root.mac, 'POST', `/mkbucketv3/${bucket}/region/z0`)).status).toBe(200) };
  },
  'uc.private': () => ({ path: `/private?bucket=${B}&private=1`, bucket: B }),
  'uc.image': () => ({ path: `/image/${B}/from/${qiniu.util.urlsafeBase64Encode('http://127.0.0.1:9/')}`, bucket: B }),
  'uc.unimage': () => ({ path: `/unimage/${B}`, bucket: B }),
  'uc.nrop': () => ({ path: `/nrop/${B}/enable/0`, bucket: B }),
  'uc.bucketInfo': () => ({ method: 'POST', path: `/v2/bucketInfo?bucket=${B}`, bucket: B }),
  'uc.domains.v2': () => ({ method: 'GET', path: `/v2/domains?tbl=${B}`, bucket: B }),
  'uc.domains.v3': () => ({ method: 'GET', path: `/v3/domains?tbl=${B}`, bucket: B }),
  'uc.maxAge': () => ({ path: `/maxAge?bucket=${B}&maxAge=60`, bucket: B }),
  'uc.referAntiLeech': () => ({ path: `/referAntiLeech?bucket=${B}&mode=0&pattern=&norefer=1&source_enabled=0`, bucket: B }),
  'uc.corsRules.set': () => ({ path: `/corsRules/set/${B}`, body: '[]', contentType: 'application/json', bucket: B }),
  'uc.corsRules.get': () => ({ method: 'GET', path: `/corsRules/get/${B}`, bucket: B }),
  'uc.accessMode': () => ({ path: `/accessMode/${B}/mode/0`, bucket: B }),
  'uc.style': () => ({ path: `/style/${B}/name/${qiniu.util.urlsafeBase64Encode('small')}/style/${qiniu.util.urlsafeBase64Encode('imageView2/2/w/10')}`, bucket: B }),
  'uc.unstyle': () => ({ path: `/unstyle/${B}/name/${qiniu.util.urlsafeBase64Encode('small')}`, bucket: B }),
  'uc.separator': () => ({ path: `/separator/${B}/sep/${qiniu.util.urlsafeBase64Encode('-')}`, bucket: B }),
  'uc.quota.set': () => ({ path: `/setbucketquota/${B}/size/-1/count/-1`, bucket: B }),
  'uc.quota.get': () => ({ method: 'GET', path: `/getbucketquota/${B}`, bucket: B }),
  'uc.rules.add': () => ({ path: `/rules/add?bucket=${B}&name=r${++n}&prefix=tmp/&delete_after_days=3`, bucket: B }),
  'uc.rules.update': () => ({ path: `/rules/update?bucket=${B}&name=nosuch&prefix=tmp/&delete_after_days=3`, bucket: B }),
  'uc.rules.delete': () => ({ path: `/rules/delete?bucket=${B}&name=nosuch`, bucket: B }),
  'uc.rules.get': () => ({ method: 'GET', path: `/rules/get?bucket=${B}`, bucket: B }),
  'uc.events.add': () => ({ path: `/events/add?bucket=${B}&name=e${++n}&event=put&callbackURL=${encodeURIComponent('http://127.0.0.1:9/cb')}`, bucket: B }),
  'uc.events.update': () => ({ path: `/events/update?bucket=${B}&name=nosuch&event=put&callbackURL=${encodeURIComponent('http://127.0.0.1:9/cb')}`, bucket: B }),
  'uc.events.delete': () => ({ path: `/events/delete?bucket=${B}&name=nosuch`, bucket: B }),
  'uc.events.get': () => ({ method: 'GET', path: `/events/get?bucket=${B}`, bucket: B }),
  'uc.bucketTagging.put': () => ({ method: 'PUT', path: `/bucketTagging?bucket=${B}`, body: JSON.stringify({ Tags: [{ Key: 'a', Value: 'b' }] }), contentType: 'application/json', bucket: B }),
  'uc.bucketTagging.get': () => ({ method: 'GET', path: `/bucketTagging?bucket=${B}`, bucket: B }),
  'uc.bucketTagging.delete': () => ({ method: 'DELETE', path: `/bucketTagging?bucket=${B}`, bucket: B }),
  'uc.noIndexPage': () => ({ path: `/noIndexPage?bucket=${B}&noIndexPage=1`, bucket: B }),
  'uc.remark': () => ({ method: 'PUT', path: `/buckets/${B}?remark`, body: JSON.stringify({ remark: 'hi' }), contentType: 'application/json', bucket: B }),

  'rs.stat': () => ({ path: `/stat/${enc(B, 'doc.txt')}`, bucket: B, key: 'doc.txt' }),
  'rs.delete': () => {
    const key = fresh('del/');
    return { path: `/delete/${enc(B, key)}`, bucket: B, key, before: () => seed(B, key) };
  },
  'rs.copy': () => ({ path: `/copy/${enc(B, 'doc.txt')}/${enc(B, 'up/copied.txt')}/force/true`, bucket: B, key: 'doc.txt', actions: ['kodo/Copy@doc.txt', 'kodo/Copy@up/copied.txt'] }),
  'rs.move': () => {
    const key = fresh('mv/');
    return { path: `/move/${enc(B, key)}/${enc(B, `up/${key}`)}`, bucket: B, key, actions: [`kodo/Move@${key}`, `kodo/Move@up/${key}`], before: () => seed(B, key) };
  },
  'rs.chgm': () => ({ path: `/chgm/${enc(B, 'doc.txt')}/mime/${qiniu.util.urlsafeBase64Encode('text/plain')}`, bucket: B, key: 'doc.txt' }),
  'rs.chtype': () => ({ path: `/chtype/${enc(B, 'doc.txt')}/type/0`, bucket: B, key: 'doc.txt' }),
  'rs.chstatus': () => ({ path: `/chstatus/${enc(B, 'doc.txt')}/status/0`, bucket: B, key: 'doc.txt' }),
  'rs.deleteAfterDays': () => ({ path: `/deleteAfterDays/${enc(B, 'doc.txt')}/0`, bucket: B, key: 'doc.txt' }),
  'rs.lifecycle': () => ({ path: `/lifecycle/${enc(B, 'doc.txt')}/deleteAfterDays/0`, bucket: B, key: 'doc.txt' }),
  'rs.restoreAr': () => ({ path: `/restoreAr/${enc(B, 'doc.txt')}/freezeAfterDays/1`, bucket: B, key: 'doc.txt' }),
  'rs.batch': () => ({
    path: '/batch',
    body: `op=/stat/${enc(B, 'doc.txt')}&op=/stat/${enc(B, 'up/a.txt')}`,
    bucket: B,
    actions: ['kodo/Stat@doc.txt', 'kodo/Stat@up/a.txt'],
  }),
  'rsf.list': () => ({ path: `/list?bucket=${B}&prefix=`, bucket: B, prefix: '' }),
  'rsf.list.v2': () => ({ path: `/v2/list?bucket=${B}&prefix=`, bucket: B, prefix: '' }),
  'io.fetch': () => ({ path: `/fetch/${qiniu.util.urlsafeBase64Encode('http://127.0.0.1:9/x')}/to/${enc(B, 'up/fetched.txt')}`, bucket: B, key: 'up/fetched.txt' }),
  'io.prefetch': () => ({ path: `/prefetch/${enc(B, 'doc.txt')}`, bucket: B, key: 'doc.txt' }),
  'api.pfop': () => ({ path: '/pfop/', body: `bucket=${B}&key=doc.txt&fops=${encodeURIComponent('avinfo')}`, bucket: B, key: 'doc.txt' }),
  'api.asyncFetch.submit': () => ({
    path: '/sisyphus/fetch',
    body: JSON.stringify({ url: 'http://127.0.0.1:9/x', bucket: B, key: 'up/async.txt' }),
    contentType: 'application/json',
    bucket: B,
    key: 'up/async.txt',
  }),
};

/** The path of an owner-only route with its parameters filled. */
function ownerOnlyPath(r: RouteEntry<unknown, unknown>): string {
  return r.url
    .replace(':bucket', 'newbucket')
    .replace(':region', 'z0')
    .replace(':accessKey', 'nosuchkey')
    .replace(':service', 'kodo')
    .replace(':action', 'Get')
    .replace(/:[A-Za-z]+/g, 'nosuch');
}

const firstMethod = (m: RouteEntry<unknown, unknown>['method']): string => (Array.isArray(m) ? m[0]! : m === 'ALL' ? 'GET' : m);

/** Whether the evaluator allows `who` `action` on bucket/key (`action@key` names a key of its own). */
function allows(who: User, bucket: string, items: Array<{ action: string; key?: string; prefix?: string }>): boolean {
  if (!who.principal) return true;
  return items.every((i) =>
    evaluate(who.principal!, { action: i.action, bucket, ...(i.key !== undefined ? { key: i.key } : {}), ...(i.prefix !== undefined ? { prefix: i.prefix } : {}) }).allowed,
  );
}

function itemsOf(p: Probe, action: string): Array<{ action: string; key?: string; prefix?: string }> {
  if (p.actions) {
    return p.actions.map((a) => {
      const [act, key] = a.split('@') as [string, string?];
      return { action: act, ...(key !== undefined ? { key } : {}) };
    });
  }
  return [{ action, ...(p.key !== undefined ? { key: p.key } : {}), ...(p.prefix !== undefined ? { prefix: p.prefix } : {}) }];
}

function judge(what: string, refused: boolean, allowed: boolean, status: number, text: string): string | undefined {
  if (allowed && refused) return `${what}: refused (${status}) but the policy allows it: ${text.slice(0, 160)}`;
  if (!allowed && !refused) return `${what}: NOT refused (${status}) but the policy refuses it: ${text.slice(0, 160)}`;
  return undefined;
}

beforeAll(async () => {
  s = await startTestServer({ GRANARY_IAM_AUDIT_MAX: '1000', GRANARY_OUTBOUND_ALLOW: '127.0.0.1' });
  root = { name: 'root', mac: s.mac };
  const bm = s.bucketManager();
  for (const b of [B, OTHER]) {
    const r = await kodo(root.mac, 'POST', `/mkbucketv3/${b}/region/z0`);
    expect(r.status, r.text).toBe(200);
  }
  void bm;
  for (const k of ['doc.txt', 'up/a.txt']) await seed(B, k);
  for (const [alias, statement] of Object.entries(POLICIES)) await iam('POST', '/policies', { alias, description: alias, edit_type: 1, statement });
  await iam('POST', '/groups', { alias: 'readers', description: 'read-only via a group' });
  await iam('POST', '/groups/readers/policies', { policy_aliases: ['readonly'] });
  const setup: Array<[string, string[], string | undefined]> = [
    ['reader', ['readonly'], undefined],
    ['uploader', ['uploadprefix'], undefined],
    ['nodeleter', ['nodelete'], undefined],
    ['grouped', [], 'readers'],
  ];
  for (const [alias, policies, group] of setup) {
    await iam('POST', '/users', { alias, password: 'correct-horse' });
    if (policies.length) await iam('POST', `/users/${alias}/policies`, { policy_aliases: policies });
    if (group) await iam('POST', `/groups/${group}/users`, { user_aliases: [alias] });
    const key = await iam('POST', `/users/${alias}/keypairs`);
    const applied = [...policies, ...(group ? ['readonly'] : [])].map((p) => ({ alias: p, via: 'user' as const, statements: storedStatements(JSON.stringify(POLICIES[p])) }));
    users.push({
      name: alias,
      mac: new qiniu.auth.digest.Mac(key.access_key as string, key.secret_key as string),
      principal: { kind: 'user', owner: AK, ownerUid: accountUid(AK), alias, enabled: true, policies: applied },
    });
  }
  expect(SK).toBeTruthy();
}, 60_000);
afterAll(async () => s?.stop());

describe('the Kodo door: every management route of the table × every user', () => {
  it('each answer is what the policy says (0 escapes); owner-only routes refuse every sub-user', async () => {
    const failures: string[] = [];
    const missing: string[] = [];
    for (const route of KODO_ROUTES as readonly RouteEntry<unknown, unknown>[]) {
      if (route.auth !== 'management') continue;
      if (route.iam === 'owner-only') {
        for (const u of [...users, root]) {
          // Root on owner-only routes: only the side-effect-free reads (creation and deletion are the IAM API tests').
          if (!u.principal && firstMethod(route.method) !== 'GET') continue;
          const a = await kodo(u.mac, firstMethod(route.method), ownerOnlyPath(route));
          const f = judge(`${u.name} ${route.operation}`, a.status === 403 || a.status === 401, !u.principal, a.status, a.text);
          if (f) failures.push(f);
        }
        continue;
      }
      if (route.iam === 'none') continue;
      const build = KODO_PROBES[route.operation];
      if (!build) {
        missing.push(route.operation);
        continue;
      }
      const action = 'action' in route.iam ? (typeof route.iam.action === 'string' ? route.iam.action : '') : '';
      // Sub-users first, the root key last (it changes state: moves, deletes).
      for (const u of [...users, root]) {
        const p = build();
        await p.before?.();
        const a = await kodo(u.mac, p.method ?? 'POST', p.path, p.body, p.contentType);
        const allowed = allows(u, p.bucket, itemsOf(p, action));
        // A batch answers each op: 298 with a 403 op is a refusal of that op.
        const ops = route.operation === 'rs.batch' ? (a.json as Array<{ code: number }>).map((r) => r.code) : [];
        const refused = a.status === 403 || a.status === 401 || ops.includes(403);
        const f = judge(`${u.name} ${route.operation} ${p.path}`, refused, allowed, a.status, a.text);
        if (f) failures.push(f);
        if (refused && a.status === 403) expect(a.json, a.text).toEqual({ error: expect.any(String) });
      }
    }
    expect(missing, 'routes without a request builder in this test').toEqual([]);
    expect(failures).toEqual([]);
  }, 60_000);

  it('SDK: a sub-user’s upload token uploads where its policy allows, is refused elsewhere (checked at commit)', async () => {
    const uploader = users.find((u) => u.name === 'uploader')!;
    const reader = users.find((u) => u.name === 'reader')!;
    const put = (mac: qiniu.auth.digest.Mac, key: string): Promise<{ status: number }> =>
      new Promise((resolve, reject) => {
        const token = new qiniu.rs.PutPolicy({ scope: `${B}:${key}` }).uploadToken(mac);
        new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, Buffer.from('x'), new qiniu.form_up.PutExtra(), (err, _body, info) =>
          err ? reject(err) : resolve({ status: info.statusCode }),
        );
      });
    expect((await put(uploader.mac, 'up/sdk.txt')).status).toBe(200);
    expect((await put(uploader.mac, 'outside.txt')).status).toBe(403);
    expect((await put(reader.mac, 'up/sdk2.txt')).status).toBe(403);
  });

  it('a private download URL signed by a sub-user key opens what its policy allows', async () => {
    expect((await kodo(root.mac, 'POST', `/private?bucket=${B}&private=1`)).status).toBe(200);
    const bm = new qiniu.rs.BucketManager(root.mac, s.zoneConfig());
    const url = (mac: qiniu.auth.digest.Mac, key: string): string =>
      new qiniu.rs.BucketManager(mac, s.zoneConfig()).privateDownloadUrl(`${s.url}/${B}`, key, Math.floor(s.clock.nowMs() / 1000) + 600);
    void bm;
    const reader = users.find((u) => u.name === 'reader')!;
    const uploader = users.find((u) => u.name === 'uploader')!;
    expect((await fetch(url(reader.mac, 'doc.txt'))).status).toBe(200);
    expect((await fetch(url(uploader.mac, 'up/a.txt'))).status).toBe(403);
    expect((await fetch(url(root.mac, 'doc.txt'))).status).toBe(200);
    expect((await kodo(root.mac, 'POST', `/private?bucket=${B}&private=0`)).status).toBe(200);
  });
});

/** The request builders of the console's session routes that need an action, by operation. */
const CONSOLE_PROBES: Record<string, () => Probe> = {
  'console.buckets.drop': () => {
    const bucket = `mx-cdrop-${++n}`;
    return { method: 'DELETE', path: `/api/buckets/${bucket}`, bucket, before: async () => void expect((await kodo(root.mac, 'POST', `/mkbucketv3/${bucket}/region/z0`)).status).toBe(200) };
  },
  'console.buckets.get': () => ({ method: 'GET', path: `/api/buckets/${B}`, bucket: B }),
  'console.buckets.setting': () => ({ method: 'PUT', path: `/api/buckets/${B}/settings/maxAge`, body: JSON.stringify({ maxAge: 60 }), bucket: B }),
  'console.buckets.style.put': () => ({ method: 'PUT', path: `/api/buckets/${B}/styles/small`, body: JSON.stringify({ style: 'imageView2/2/w/10' }), bucket: B }),
  'console.buckets.style.delete': () => ({ method: 'DELETE', path: `/api/buckets/${B}/styles/nosuch`, bucket: B }),
  'console.buckets.domain.bind': () => ({ method: 'POST', path: `/api/buckets/${B}/domains`, body: JSON.stringify({ domain: 'x.invalid' }), bucket: B }),
  'console.buckets.domain.unbind': () => ({ method: 'DELETE', path: `/api/buckets/${B}/domains/nosuch.invalid`, bucket: B }),
  'console.buckets.rule.add': () => ({ method: 'POST', path: `/api/buckets/${B}/rules`, body: JSON.stringify({ name: `c${++n}`, prefix: 'tmp/', delete_after_days: 3 }), bucket: B }),
  'console.buckets.rule.update': () => ({ method: 'PUT', path: `/api/buckets/${B}/rules/nosuch`, body: JSON.stringify({ prefix: 'tmp/' }), bucket: B }),
  'console.buckets.rule.delete': () => ({ method: 'DELETE', path: `/api/buckets/${B}/rules/nosuch`, bucket: B }),
  'console.buckets.event.add': () => ({ method: 'POST', path: `/api/buckets/${B}/events`, body: JSON.stringify({ name: `ce${++n}` }), bucket: B }),
  'console.buckets.event.update': () => ({ method: 'PUT', path: `/api/buckets/${B}/events/nosuch`, body: JSON.stringify({}), bucket: B }),
  'console.buckets.event.delete': () => ({ method: 'DELETE', path: `/api/buckets/${B}/events/nosuch`, bucket: B }),
  'console.files.list': () => ({ method: 'GET', path: `/api/buckets/${B}/objects`, bucket: B }),
  'console.files.stat': () => ({ method: 'GET', path: `/api/buckets/${B}/stat?key=doc.txt`, bucket: B }),
  'console.files.uploadToken': () => ({ method: 'POST', path: `/api/buckets/${B}/upload-token`, body: JSON.stringify({ key: 'up/c.txt' }), bucket: B }),
  'console.files.link': () => ({ method: 'POST', path: `/api/buckets/${B}/link`, body: JSON.stringify({ key: 'doc.txt' }), bucket: B }),
  'console.files.op': () => ({ method: 'POST', path: `/api/buckets/${B}/ops/chstatus`, body: JSON.stringify({ key: 'doc.txt', status: 0 }), bucket: B, actions: ['kodo/Chstatus'] }),
  'console.versions.list': () => ({ method: 'GET', path: `/api/buckets/${B}/versions?key=doc.txt`, bucket: B }),
  'console.versions.download': () => ({ method: 'GET', path: `/api/buckets/${B}/versions/download?key=doc.txt&versionId=null`, bucket: B }),
  'console.versions.restore': () => ({ method: 'POST', path: `/api/buckets/${B}/versions/restore`, body: JSON.stringify({ key: 'nosuch-v.txt', versionId: 'null' }), bucket: B }),
  'console.versions.delete': () => ({ method: 'POST', path: `/api/buckets/${B}/versions/delete`, body: JSON.stringify({ key: 'nosuch-v.txt', versionId: 'null' }), bucket: B }),
  'console.jobs.submit': () => ({ method: 'POST', path: '/api/jobs', body: JSON.stringify({ bucket: B, key: 'doc.txt', fops: 'avinfo' }), bucket: B, key: 'doc.txt' }),
  'console.fetchTasks.submit': () => ({ method: 'POST', path: '/api/fetch-tasks', body: JSON.stringify({ url: 'http://127.0.0.1:9/x', bucket: B, key: 'up/cf.txt' }), bucket: B, key: 'up/cf.txt' }),
};

describe('the console: every session route of the console table × every user', () => {
  it('each answer is what the policy says (0 escapes); owner-only routes refuse every sub-user', async () => {
    const failures: string[] = [];
    const missing: string[] = [];
    const sessions = new Map<string, ConsoleClient>();
    for (const u of [...users, root]) {
      const c = new ConsoleClient(s.consoleUrl!);
      const a = await c.signIn(u.mac.accessKey, u.mac.secretKey);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      sessions.set(u.name, c);
    }
    for (const route of CONSOLE_ROUTES as readonly RouteEntry<unknown, unknown>[]) {
      if (route.auth !== 'console-session' || route.iam === 'none') continue;
      if (route.iam === 'owner-only') {
        for (const u of users) {
          const a = await sessions.get(u.name)!.call(firstMethod(route.method), ownerOnlyPath(route), firstMethod(route.method) === 'GET' ? undefined : {});
          if (a.status !== 403) failures.push(`${u.name} ${route.operation}: ${a.status} on an owner-only route`);
        }
        continue;
      }
      const build = CONSOLE_PROBES[route.operation];
      if (!build) {
        missing.push(route.operation);
        continue;
      }
      const action = 'action' in route.iam ? (typeof route.iam.action === 'string' ? route.iam.action : 'kodo/Chstatus') : '';
      for (const u of [...users, root]) {
        const p = build();
        await p.before?.();
        const a = await sessions.get(u.name)!.call(p.method ?? 'POST', p.path, p.body === undefined ? undefined : JSON.parse(p.body));
        // Path buckets are decided on the bucket (route.bucket `param`), body ones on the key.
        const items = route.bucket.from === 'param' ? [{ action: p.actions?.[0] ?? action }] : itemsOf(p, action);
        const f = judge(`${u.name} ${route.operation} ${p.path}`, a.status === 403, allows(u, p.bucket, items), a.status, JSON.stringify(a.body));
        if (f) failures.push(f);
      }
    }
    expect(missing, 'routes without a request builder in this test').toEqual([]);
    expect(failures).toEqual([]);
  }, 60_000);
});

/** The raw request of an S3 row for a bucket and key (sub-resource query, the header it needs). */
function s3Probe(r: S3Route): { method: string; path: string; headers: Record<string, string>; body: string; bucket: string; key?: string } | undefined {
  const key = r.operation === 'DeleteObject' ? fresh('s3del/') : r.shape === 'object' ? 'doc.txt' : undefined;
  const base = r.shape === 'service' ? '/' : `/${B}${key !== undefined ? `/${key}` : ''}`;
  const q = r.query === undefined ? '' : `?${r.query.includes('=') ? r.query : `${r.query}${r.query === 'uploadId' ? '=nosuch&partNumber=1' : ''}`}`;
  const headers: Record<string, string> = {};
  if (r.header === 'x-amz-copy-source') headers['x-amz-copy-source'] = `/${B}/up/a.txt`;
  let body = '';
  if (r.operation === 'DeleteObjects') body = `<Delete><Object><Key>del-none.txt</Key></Object></Delete>`;
  if (r.operation === 'PutBucketTagging') body = '<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>';
  if (r.operation === 'PutObjectTagging') body = '<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>';
  if (r.operation === 'PutObject' || r.operation === 'UploadPart') body = 'hello';
  return { method: r.method, path: `${base}${q}`, headers, body, bucket: B, ...(key !== undefined ? { key } : {}) };
}

describe('the S3 door: every row of the S3 table × every user', () => {
  it('each answer is what the policy says (AccessDenied, 0 escapes)', async () => {
    const host = new URL(s.s3Url!).host;
    const failures: string[] = [];
    for (const r of S3_ROUTES) {
      if (r.iam === 'none' || r.auth === 'form' || r.method === 'OPTIONS') continue;
      for (const u of [...users, root]) {
        const p = s3Probe(r)!;
        if (r.operation === 'DeleteObject') await seed(B, p.key!);
        const signed = signV4({ method: p.method, host, path: p.path, headers: p.headers, payloadHash: payloadHash(p.body), ak: u.mac.accessKey, sk: u.mac.secretKey, nowMs: s.clock.nowMs() });
        const a = await rawRequest(s.s3Url!, p.method, p.path, signed.headers, p.body === '' ? undefined : p.body);
        const refused = a.status === 403;
        let allowed: boolean;
        if (r.iam === 'owner-only') allowed = !u.principal;
        else {
          const items = [{ action: kodoActionOfS3(r.iam)!, ...(p.key !== undefined ? { key: p.key } : {}), ...(r.operation.startsWith('List') ? { prefix: '' } : {}) }];
          // A copy reads its source too (kodo/Get on it).
          if (r.header === 'x-amz-copy-source') items.push({ action: 'kodo/Get', key: 'up/a.txt' });
          allowed = allows(u, B, items);
        }
        if (r.operation === 'DeleteObjects') {
          // Per key: a refused key is an <Error> with AccessDenied in a 200 answer.
          const keyRefused = /<Code>AccessDenied<\/Code>/.test(a.body);
          const f = judge(`${u.name} ${r.operation}`, keyRefused, allows(u, B, [{ action: 'kodo/Delete', key: 'del-none.txt' }]), a.status, a.body);
          if (f) failures.push(f);
          continue;
        }
        if (r.operation === 'CreateBucket' && !u.principal) continue;
        const f = judge(`${u.name} ${r.operation} ${p.method} ${p.path}`, refused, allowed, a.status, a.body);
        if (f) failures.push(f);
        if (refused && p.method !== 'HEAD') expect(errorCode(a), a.body).toBe('AccessDenied');
      }
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('AWS SDK v3: a sub-user’s key pair works with exactly its rights', async () => {
    const client = (name: string) => {
      const u = users.find((x) => x.name === name)!;
      return s3Client(s.s3Url!, u.mac.accessKey, u.mac.secretKey);
    };
    const reader = client('reader');
    expect(await codeOf(reader.send(new GetObjectCommand({ Bucket: B, Key: 'doc.txt' })))).toBe('no error');
    expect(await codeOf(reader.send(new ListObjectsV2Command({ Bucket: B })))).toBe('no error');
    expect(await codeOf(reader.send(new PutObjectCommand({ Bucket: B, Key: 'up/r.txt', Body: 'x' })))).toBe('AccessDenied');
    expect(await codeOf(reader.send(new CreateBucketCommand({ Bucket: 'sub-made' })))).toBe('AccessDenied');
    const uploader = client('uploader');
    expect(await codeOf(uploader.send(new PutObjectCommand({ Bucket: B, Key: 'up/s3.txt', Body: 'x' })))).toBe('no error');
    expect(await codeOf(uploader.send(new PutObjectCommand({ Bucket: B, Key: 'elsewhere.txt', Body: 'x' })))).toBe('AccessDenied');
    expect(await codeOf(uploader.send(new GetObjectCommand({ Bucket: B, Key: 'up/s3.txt' })))).toBe('AccessDenied');
    const nodeleter = client('nodeleter');
    expect(await codeOf(nodeleter.send(new PutObjectCommand({ Bucket: B, Key: 'nd.txt', Body: 'x' })))).toBe('no error');
    expect(await codeOf(nodeleter.send(new DeleteObjectCommand({ Bucket: B, Key: 'nd.txt' })))).toBe('AccessDenied');
    expect(await codeOf(client('grouped').send(new GetObjectCommand({ Bucket: B, Key: 'doc.txt' })))).toBe('no error');
    expect(await codeOf(client('grouped').send(new GetObjectCommand({ Bucket: OTHER, Key: 'doc.txt' })))).toBe('AccessDenied');
  });
});

describe('S3 presigned URLs and SigV2 of a sub-user', () => {
  it('a presigned GET/PUT signed by a sub-user key opens what its policy allows, nothing else', async () => {
    const presign = (name: string, cmd: GetObjectCommand | PutObjectCommand): Promise<string> => {
      const u = users.find((x) => x.name === name)!;
      return getSignedUrl(s3Client(s.s3Url!, u.mac.accessKey, u.mac.secretKey), cmd, { expiresIn: 300 });
    };
    expect((await fetch(await presign('reader', new GetObjectCommand({ Bucket: B, Key: 'doc.txt' })))).status).toBe(200);
    expect((await fetch(await presign('uploader', new GetObjectCommand({ Bucket: B, Key: 'doc.txt' })))).status).toBe(403);
    expect((await fetch(await presign('uploader', new PutObjectCommand({ Bucket: B, Key: 'up/presigned.txt' })), { method: 'PUT', body: 'x' })).status).toBe(200);
    expect((await fetch(await presign('uploader', new PutObjectCommand({ Bucket: B, Key: 'nope.txt' })), { method: 'PUT', body: 'x' })).status).toBe(403);
  });

  it('SigV2 (header) of a sub-user key: its rights likewise', async () => {
    const reader = users.find((x) => x.name === 'reader')!;
    const get = async (key: string): Promise<number> => {
      const date = new Date().toUTCString();
      const auth = signV2('GET', `/${B}/${key}`, { date }, reader.mac.accessKey, reader.mac.secretKey);
      return (await rawRequest(s.s3Url!, 'GET', `/${B}/${key}`, { date, authorization: auth })).status;
    };
    expect(await get('doc.txt')).toBe(200);
    expect(await get('nosuchkey.txt')).toBe(404);
    expect((await rawRequest(s.s3Url!, 'DELETE', `/${B}/doc.txt`, (() => {
      const date = new Date().toUTCString();
      return { date, authorization: signV2('DELETE', `/${B}/doc.txt`, { date }, reader.mac.accessKey, reader.mac.secretKey) };
    })())).status).toBe(403);
  });
});

describe('refusals are recorded; disabled keys are refused', () => {
  it('the audits API lists the refusals (who, action, resource, request id); /metrics counts them by door and action', async () => {
    const reader = users.find((u) => u.name === 'reader')!;
    const a = await kodo(reader.mac, 'POST', `/delete/${enc(B, 'doc.txt')}`);
    expect(a.status).toBe(403);
    const reqId = a.headers.get('x-reqid');
    let found: Record<string, unknown> | undefined;
    for (let i = 0; i < 200 && !found; i++) {
      const audits = (await iam('GET', '/audits?action=kodo%2FDelete&limit=100')) as { list?: Array<Record<string, unknown>> };
      found = audits.list?.find((r) => r.request_id === reqId);
      if (!found) await new Promise((r) => setImmediate(r));
    }
    expect(found).toMatchObject({ service: 'kodo', action: 'kodo/Delete', resource: `qrn:kodo:::${B}/doc.txt`, error_code: 403 });
    const metrics = await (await fetch(`${s.consoleUrl}/metrics`)).text();
    expect(metrics).toMatch(/granary_iam_refused_total\{door="kodo",action="kodo\/Delete"\} [1-9]/);
    expect(metrics).toMatch(/granary_iam_refused_total\{door="s3",action="kodo\/Upload"\} [1-9]/);
  });

  it('a disabled key pair and a disabled user are refused on both doors; enabled again, accepted', async () => {
    const reader = users.find((u) => u.name === 'reader')!;
    const stat = (): Promise<RawAnswer> => kodo(reader.mac, 'POST', `/stat/${enc(B, 'doc.txt')}`);
    const s3get = (): Promise<string> => codeOf(s3Client(s.s3Url!, reader.mac.accessKey, reader.mac.secretKey).send(new GetObjectCommand({ Bucket: B, Key: 'doc.txt' })));
    expect((await stat()).status).toBe(200);
    await iam('POST', `/users/reader/keypairs/${reader.mac.accessKey}/disable`);
    expect((await stat()).status).toBe(401);
    expect(await s3get()).toBe('InvalidAccessKeyId');
    await iam('POST', `/users/reader/keypairs/${reader.mac.accessKey}/enable`);
    expect((await stat()).status).toBe(200);
    const console = new ConsoleClient(s.consoleUrl!);
    expect((await console.signIn(reader.mac.accessKey, reader.mac.secretKey)).status).toBe(200);
    await iam('PATCH', '/users/reader', { enabled: false });
    expect((await stat()).status).toBe(401);
    // A console session outliving the disabled user can do nothing: no bucket, nothing owner-only.
    expect((await console.call('GET', `/api/buckets/${B}`)).status).toBe(403);
    expect((await console.call('POST', '/api/buckets', { name: 'made-by-disabled', region: 'z0' })).status).toBe(403);
    await iam('PATCH', '/users/reader', { enabled: true });
    expect(await s3get()).toBe('no error');
  });
});
