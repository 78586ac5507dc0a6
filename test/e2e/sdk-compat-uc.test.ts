/**
 * Bucket (uc) calls as Qiniu's Go, Java, Python and PHP SDKs send them (docs/development/kodo-protocol.md §8.6, §8.7, §14).
 * Each test sends the SDK's request (plain fetch signed as the SDK signs: `Qiniu` for the Go
 * and Java SDKs, `QBox` for the Python SDK's `_post_with_auth`) and checks what the SDK's parser or test reads. The
 * SDKs' sources were read at: go-sdk v7 `storage/bucket.go` (BucketManager: GetBucketInfo, SetRemark,
 * BucketInfosInRegion, AddCorsRules/GetCorsRules, SetBucketMaxAge, TurnOn/OffIndexPage, SetTagging/GetTagging/
 * ClearTagging); python-sdk `qiniu/services/storage/bucket.py` and `tests/.../test_bucket_manager.py`; php-sdk
 * `src/Qiniu/Storage/BucketManager.php`; java-sdk `com/qiniu/storage/BucketManager.java`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheControl } from '../../src/buckets/max-age.js';
import { signedFetch } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';

const B = 'uc-compat';
let s: TestServer;

type Json = Record<string, unknown>;

/** A Qiniu-signed request (Go `clientv2` with the Qiniu credential; Java `Auth.authorizationV2`). */
async function qiniuCall(method: string, path: string, body?: unknown): Promise<{ status: number; text: string; json: unknown }> {
  const res = await signedFetch(s, {
    method,
    path,
    ...(body !== undefined ? { body: JSON.stringify(body), contentType: 'application/json' } : {}),
  });
  const text = await res.text();
  expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
  return { status: res.status, text, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function info(): Promise<Json> {
  const r = await qiniuCall('POST', `/v2/bucketInfo?bucket=${B}`);
  expect(r.status).toBe(200);
  return r.json as Json;
}

beforeAll(async () => {
  s = await startTestServer();
  expect((await sdk(s.bucketManager().createBucket(B, { regionId: 'z0' }))).status).toBe(200);
}, 60_000);
afterAll(async () => s.stop());

describe('every 2xx JSON answer has a JSON body', () => {
  it.each([
    ['php-sdk 7.x BucketManager::createBucket', 'POST', '/mkbucketv3/uc-made/region/z0'],
    ['go-sdk v7.25 SetBucketMaxAge', 'POST', `/maxAge?bucket=${B}&maxAge=100`],
    ['go-sdk v7.25 SetBucketAccessMode', 'POST', `/private?bucket=${B}&private=0`],
    ['go-sdk v7.25 SetBucketAccessStyle', 'POST', `/accessMode/${B}/mode/0`],
    ['go-sdk v7.25 SetBucketQuota', 'POST', `/setbucketquota/${B}/size/-1/count/-1`],
    ['python-sdk 7.x BucketManager rules/add', 'POST', `/rules/add?bucket=${B}&name=r1&prefix=logs/&delete_after_days=7`],
    ['python-sdk 7.x BucketManager rules/delete', 'POST', `/rules/delete?bucket=${B}&name=r1`],
    ['php-sdk 7.x BucketManager::deleteBucket', 'POST', '/drop/uc-made'],
  ])('%s: %s %s answers 200 {}', async (_sdk, method, path) => {
    // The SDKs decode every 200 as JSON (Go clientv2.DoAndDecodeJsonResponse, PHP Response::json(), Python
    // ResponseInfo + json.loads): an empty body decoded to null, Kodo answers {}.
    const r = await qiniuCall(method, path);
    expect([r.status, r.text]).toEqual([200, '{}']);
  });
});

describe('bucket listings', () => {
  it('python-sdk 7.x list_bucket: POST /v3/buckets?region=z0 (QBox) answers [{tbl, …}] holding the bucket', async () => {
    // test_bucket_manager.py test_list_bucket: `any(b.get('tbl') == bucket_name for b in ret)`.
    const res = await signedFetch(s, { path: '/v3/buckets?region=z0', scheme: 'QBox' });
    expect(res.status).toBe(200);
    const list = (await res.json()) as Json[];
    expect(list.some((b) => b.tbl === B)).toBe(true);
    expect(list.find((b) => b.tbl === B)).toMatchObject({ region: 'z0', zone: 'z0', global: false, line: false });
  });

  it('php-sdk 7.x listbuckets: POST /v3/buckets?region=z0&global=false&line=false&shared= answers the bucket; another region none', async () => {
    const r = await qiniuCall('POST', '/v3/buckets?region=z0&global=false&line=false&shared=');
    expect((r.json as Json[]).map((b) => b.tbl)).toContain(B);
    expect((await qiniuCall('POST', '/v3/buckets?region=na0')).json).toEqual([]);
  });

  it('go-sdk v7.25 BucketInfosInRegion / php-sdk bucketInfos: POST /v2/bucketInfos?region=z0&fs=false answers [{name, info}]', async () => {
    // Go: []BucketSummary{Name "name", Info BucketInfo "info"}.
    const r = await qiniuCall('POST', '/v2/bucketInfos?region=z0&global=false&shared=false&fs=false');
    expect(r.status).toBe(200);
    const entry = (r.json as Json[]).find((e) => e.name === B);
    expect(entry?.info).toMatchObject({ private: 0, protected: 0, region: 'z0' });
  });
});

describe('bucketTagging', () => {
  it('go-sdk v7.25 SetTagging / GetTagging / ClearTagging: PUT, GET, DELETE /bucketTagging?bucket=', async () => {
    const tags = { Tags: [{ Key: 'env', Value: 'prod' }, { Key: 'team', Value: 'media @ hq' }] };
    expect(await qiniuCall('PUT', `/bucketTagging?bucket=${B}`, tags)).toMatchObject({ status: 200, text: '{}' });
    // GetTagging decodes BucketTagging{Tags []BucketTag{Key "Key", Value "Value"}}.
    expect(await qiniuCall('GET', `/bucketTagging?bucket=${B}`)).toMatchObject({ status: 200, json: tags });
    expect(await qiniuCall('DELETE', `/bucketTagging?bucket=${B}`)).toMatchObject({ status: 200, text: '{}' });
    expect((await qiniuCall('GET', `/bucketTagging?bucket=${B}`)).json).toEqual({ Tags: [] });
  });

  it('bucketTagging without a credential → 401, for every method (not 404)', async () => {
    for (const method of ['PUT', 'GET', 'DELETE']) {
      const res = await fetch(`${s.url}/bucketTagging?bucket=${B}`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'PUT' ? { body: '{"Tags":[]}' } : {}) });
      expect(res.status, method).toBe(401);
      expect(await res.json(), method).toEqual({ error: expect.any(String) });
    }
  });

  it('go-sdk v7.25 SetTagging with a tag breaking Kodo’s rules → 400, and a missing bucket → 631', async () => {
    for (const bad of [{ Tags: [{ Key: 'kodo-x', Value: 'v' }] }, { Tags: [{ Key: 'k', Value: '' }] }, { Tags: [{ Key: 'k', Value: 'a' }, { Key: 'k', Value: 'b' }] }, { tags: [] }]) {
      expect((await qiniuCall('PUT', `/bucketTagging?bucket=${B}`, bad)).status, JSON.stringify(bad)).toBe(400);
    }
    expect((await qiniuCall('PUT', '/bucketTagging?bucket=no-such-bucket', { Tags: [] })).status).toBe(631);
  });
});

describe('status codes and messages as Kodo answers them', () => {
  it('java-sdk 7.x getBucketInfo / go-sdk GetBucketInfo of a bucket that does not exist → 612', async () => {
    const r = await qiniuCall('POST', '/v2/bucketInfo?bucket=no-such-bucket');
    expect([r.status, r.json]).toEqual([612, { error: 'no such bucket' }]);
  });

  it('go-sdk v7.25 UpdateBucketLifeCycleRule / UpdateBucketEnvent of an unknown name → 400', async () => {
    const rule = await signedFetch(s, { path: '/rules/update', body: `bucket=${B}&name=nope&prefix=x/&delete_after_days=1` });
    expect(rule.status).toBe(400);
    const ev = await signedFetch(s, { path: '/events/update', body: `bucket=${B}&name=nope&event=put&callbackURL=http://127.0.0.1:1/cb` });
    expect(ev.status).toBe(400);
  });

  it('go-sdk v7.25 CreateBucket of a bucket one owns → 614 "the bucket already exists and you own it."', async () => {
    const r = await qiniuCall('POST', `/mkbucketv3/${B}/region/z0`);
    expect([r.status, r.json]).toEqual([614, { error: 'the bucket already exists and you own it.' }]);
  });
});

describe('corsRules as set', () => {
  it('go-sdk v7.25 AddCorsRules with allowed_method [""] and allowed_origin [""] is stored; GetCorsRules returns it verbatim', async () => {
    // Go CorsRule has no omitempty: nil lists travel as null, max_age as 0.
    const rules = [
      { allowed_origin: ['http://www.test1.com'], allowed_method: [''], allowed_header: null, exposed_header: null, max_age: 0 },
      { allowed_origin: [''], allowed_method: ['GET'], allowed_header: ['X-Custom'], exposed_header: ['ETag'], max_age: 20 },
    ];
    expect(await qiniuCall('POST', `/corsRules/set/${B}`, rules)).toMatchObject({ status: 200, text: '{}' });
    expect((await qiniuCall('GET', `/corsRules/get/${B}`)).json).toEqual(rules);
    // Setting [] removes them.
    expect((await qiniuCall('POST', `/corsRules/set/${B}`, [])).status).toBe(200);
    expect((await qiniuCall('GET', `/corsRules/get/${B}`)).json).toEqual([]);
  });
});

describe('bucketInfo as set', () => {
  it.each([-2147483648, -1, 0])('java-sdk 7.x putBucketMaxAge(%i): bucketInfo max_age reports the value set', async (maxAge) => {
    expect((await qiniuCall('POST', `/maxAge?bucket=${B}&maxAge=${maxAge}`)).status).toBe(200);
    expect((await info()).max_age).toBe(maxAge);
    // The default still applies when serving.
    expect(cacheControl({ private: false, settings: { maxAge } }, 0)).toBe('public, max-age=31536000');
  });

  it('java-sdk 7.x putReferAntiLeech mode 0: bucketInfo leaves refer_wl and refer_bl out', async () => {
    expect((await qiniuCall('POST', `/referAntiLeech?bucket=${B}&mode=1&norefer=0&pattern=a.test&source_enabled=0`)).status).toBe(200);
    expect(await info()).toMatchObject({ anti_leech_mode: 1, refer_wl: ['a.test'] });
    expect(await info()).not.toHaveProperty('refer_bl');
    expect((await qiniuCall('POST', `/referAntiLeech?bucket=${B}&mode=0&norefer=0&pattern=&source_enabled=0`)).status).toBe(200);
    const after = await info();
    expect(after.anti_leech_mode).toBe(0);
    expect(after).not.toHaveProperty('refer_wl');
    expect(after).not.toHaveProperty('refer_bl');
  });
});

describe('noIndexPage and remark', () => {
  it('go-sdk v7.25 TurnOffIndexPage / TurnOnIndexPage: POST /noIndexPage?bucket=&noIndexPage=1|0 → bucketInfo no_index_page', async () => {
    expect(await qiniuCall('POST', `/noIndexPage?bucket=${B}&noIndexPage=1`)).toMatchObject({ status: 200, text: '{}' });
    expect((await info()).no_index_page).toBe(1);
    expect((await qiniuCall('POST', `/noIndexPage?bucket=${B}&noIndexPage=0`)).status).toBe(200);
    expect((await info()).no_index_page).toBe(0);
    expect((await qiniuCall('POST', `/noIndexPage?bucket=${B}&noIndexPage=2`)).status).toBe(400);
    expect((await qiniuCall('POST', '/noIndexPage?bucket=no-such-bucket&noIndexPage=1')).status).toBe(631);
  });

  it('go-sdk v7.25 SetRemark: PUT /buckets/<bucket>?remark {"remark"} → bucketInfo remark (Go BucketInfo.Remark)', async () => {
    expect(await qiniuCall('PUT', `/buckets/${B}?remark`, { remark: 'photos of 2024' })).toMatchObject({ status: 200, text: '{}' });
    expect((await info()).remark).toBe('photos of 2024');
    expect((await qiniuCall('PUT', `/buckets/${B}?remark`, { remark: 7 })).status).toBe(400);
    expect((await qiniuCall('PUT', `/buckets/${B}`, { remark: 'x' })).status).toBe(400);
    const unsigned = await fetch(`${s.url}/buckets/${B}?remark`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"remark":"x"}' });
    expect(unsigned.status).toBe(401);
  });
});
