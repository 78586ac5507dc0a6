/**
 * Region discovery as Qiniu's Java, Go, Python, Node and browser SDKs send it and parse it (docs/development/kodo-protocol.md §1.2,
 * "Region query"). Each test sends the SDK's exact request (plain fetch:
 * the queries carry no credential, `/regions` is signed by the Go SDK) and checks the fields the SDK's parser reads,
 * quoting the parser. The SDKs' sources were read at: java-sdk `com/qiniu/storage/AutoRegion.java` (v3) and
 * `com/qiniu/common/AutoZone.java` (v1); go-sdk v7 `storage/region_uc_v2.go`, `storage/region_uc_v4.go`,
 * `storagev2/region/query.go` and `storagev2/region/all.go`; python-sdk `qiniu/http/regions_provider.py`.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { AK, sdk, startTestServer, type TestServer } from '../helpers/server.js';

const BUCKET = 'disc-bucket';
let s: TestServer;
/** A server advertising operator-set hosts (GRANARY_<SERVICE>_HOSTS). */
let multi: TestServer;
const UP = ['up-a.example.test:9000', 'up-b.example.test', '10.0.0.7:9000'];
const IO = ['io.example.test'];

type Json = Record<string, unknown>;

async function getJson(url: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: res.status, body: (await res.json()) as Json };
}

/** `obj.a.b.c` or undefined. */
function at(obj: unknown, ...path: string[]): unknown {
  return path.reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Json)[k] : undefined), obj);
}

beforeAll(async () => {
  s = await startTestServer();
  expect((await sdk(s.bucketManager().createBucket(BUCKET, { regionId: 'z0' }))).status).toBe(200);
  multi = await startTestServer({ GRANARY_UP_HOSTS: UP.join(', '), GRANARY_IO_HOSTS: IO.join(',') });
  expect((await sdk(multi.bucketManager().createBucket(BUCKET, { regionId: 'z0' }))).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await multi?.stop();
});

describe('java-sdk 7.x', () => {
  it('AutoRegion: GET /v3/query answers hosts[] with up.acc.main/backup, up.src.main, io.src.main, rs|rsf|api|uc.acc.main and ttl', async () => {
    // AutoRegion.getRegionJson: client.get(ucServer + "/v3/query?ak=" + ak + "&bucket=" + bucket) → UCRet{hosts[]};
    // regionGroup(): host.ttl, host.up.allSrcHosts() (acc.main + acc.backup), host.up.allAccHosts() (src.main +
    // src.backup), host.io/rs/rsf/api/uc.getOneHost() (acc hosts first, then src).
    const { status, body } = await getJson(`${s.url}/v3/query?ak=${AK}&bucket=${BUCKET}`);
    expect(status).toBe(200);
    const hosts = body.hosts as Json[];
    expect(hosts).toHaveLength(1);
    const h = hosts[0]!;
    expect(h.ttl).toEqual(expect.any(Number));
    expect(at(h, 'up', 'acc', 'main')).toEqual([s.host]);
    expect(at(h, 'up', 'acc', 'backup')).toEqual([]);
    expect(at(h, 'up', 'src', 'main')).toEqual([s.host]);
    expect(at(h, 'io', 'src', 'main')).toEqual([s.host]);
    expect(at(h, 'io_src', 'src', 'main')).toEqual([s.host]);
    for (const service of ['rs', 'rsf', 'api', 'uc']) expect(at(h, service, 'acc', 'main'), service).toEqual([s.host]);
    // No `domains` (the v4 shape): the Java parser found none of its fields there ("no up host found").
    expect(at(h, 'up', 'domains')).toBeUndefined();
  });

  it('AutoRegion: GET /v3/query with GRANARY_UP_HOSTS lists the main up host then the backups (Kodo order)', async () => {
    const { body } = await getJson(`${multi.url}/v3/query?ak=${AK}&bucket=${BUCKET}`);
    const h = (body.hosts as Json[])[0];
    expect(at(h, 'up', 'acc')).toEqual({ main: [UP[0]], backup: UP.slice(1) });
    expect(at(h, 'up', 'src')).toEqual({ main: [UP[0]], backup: UP.slice(1) });
    expect(at(h, 'io', 'src', 'main')).toEqual(IO);
    // Services without a list keep the public URL's host.
    expect(at(h, 'rs', 'acc', 'main')).toEqual([multi.host]);
  });

  it('AutoZone (deprecated): GET /v1/query answers {ttl, http:{up,io}, https:{up,io}} with URLs and the "-H <host> http://<ip>" third up entry', async () => {
    // AutoZone.ZoneInfo.buildFromUcRet: upsHttp = ret.http.get("up"); upHttp = upsHttp.get(0); upBackupHttp =
    // upsHttp.get(1); upIpHttp = upsHttp.get(2).split(" ")[2].split("//")[1]; ioHttp = ret.http.get("io").get(0);
    // upHttps = ret.https.get("up").get(0); ioHttps = ret.https.get("io").get(0).
    const { status, body } = await getJson(`${multi.url}/v1/query?ak=${AK}&bucket=${BUCKET}`);
    expect(status).toBe(200);
    expect(body.ttl).toEqual(expect.any(Number));
    const httpUp = at(body, 'http', 'up') as string[];
    expect(httpUp[0]).toBe(`http://${UP[0]}`);
    expect(httpUp[1]).toBe(`http://${UP[1]}`);
    expect(httpUp[2]!.split(' ')[2]!.split('//')[1]).toBe(UP[0]);
    expect((at(body, 'http', 'io') as string[])[0]).toBe(`http://${IO[0]}`);
    expect((at(body, 'https', 'up') as string[])[0]).toBe(`https://${UP[0]}`);
    expect((at(body, 'https', 'io') as string[])[0]).toBe(`https://${IO[0]}`);
    // With one up host the backup repeats the main one (the parser needs three entries).
    const one = await getJson(`${s.url}/v1/query?ak=${AK}&bucket=${BUCKET}`);
    expect(at(one.body, 'http', 'up')).toEqual([`http://${s.host}`, `http://${s.host}`, `-H 127.0.0.1 http://${s.host}`]);
  });

  it('AutoZone: GET /v1/query with an unknown AccessKey → 612 app/accesskey is not found', async () => {
    const { status, body } = await getJson(`${s.url}/v1/query?ak=nobody&bucket=${BUCKET}`);
    expect([status, body]).toEqual([612, { error: 'app/accesskey is not found' }]);
  });

  it('AutoRegion: GET /v3/query for a bucket that does not exist → 631 no such bucket', async () => {
    const { status, body } = await getJson(`${s.url}/v3/query?ak=${AK}&bucket=no-such-bucket`);
    expect([status, body]).toEqual([631, { error: 'no such bucket' }]);
  });
});

describe('go-sdk v7.25', () => {
  it('storage.getRegionByV2: GET /v2/query answers up.src/acc {main,backup}, io.src.main, io_src.src.main, rs|rsf|api {acc|src}.main, ttl', async () => {
    // region_uc_v2.go: UcQueryRet{TTL "ttl", IoInfo "io", IoSrcInfo "io_src", Up "up", RsInfo "rs", RsfInfo "rsf",
    // ApiInfo "api"}; SrcUpHosts = getSrcHostsFromInfo(Up) (src.main + src.backup), CdnUpHosts =
    // getAccHostsFromInfo(Up), IovipHost/RsHost/… = getOneHostFromInfo (src first, then acc).
    const { status, body } = await getJson(`${multi.url}/v2/query?ak=${AK}&bucket=${BUCKET}`);
    expect(status).toBe(200);
    expect(body.ttl).toEqual(expect.any(Number));
    expect([...(at(body, 'up', 'src', 'main') as string[]), ...(at(body, 'up', 'src', 'backup') as string[])]).toEqual(UP);
    expect([...(at(body, 'up', 'acc', 'main') as string[]), ...(at(body, 'up', 'acc', 'backup') as string[])]).toEqual(UP);
    expect(at(body, 'io', 'src', 'main')).toEqual(IO);
    expect(at(body, 'io_src', 'src', 'main')).toEqual(IO);
    for (const service of ['rs', 'rsf', 'api']) expect((at(body, service, 'acc', 'main') as string[])[0], service).toBe(multi.host);
  });

  it('storage.getRegionByV4 / storagev2 bucketRegionsQuery: GET /v4/query answers hosts[].{region, ttl, up|io|io_src|rs|rsf|api|uc}.domains', async () => {
    // region_uc_v4.go ucQueryV4Region / storagev2/region/query.go v4QueryRegion: {region, ttl, io, io_src, up, rs,
    // rsf, api, uc} each {domains, old}; SrcUpHosts = Up.Domains; getOneServer() = domains[0], else old[0].
    const { status, body } = await getJson(`${multi.url}/v4/query?ak=${AK}&bucket=${BUCKET}`);
    expect(status).toBe(200);
    const h = (body.hosts as Json[])[0]!;
    expect(h.region).toBe('z0');
    expect(h.ttl).toEqual(expect.any(Number));
    expect(at(h, 'up', 'domains')).toEqual(UP);
    expect(at(h, 'io', 'domains')).toEqual(IO);
    expect(at(h, 'io_src', 'domains')).toEqual(IO);
    for (const service of ['rs', 'rsf', 'api', 'uc']) expect(at(h, service, 'domains'), service).toEqual([multi.host]);
  });

  it('storagev2 allRegionsProvider: GET /regions (Qiniu-signed) answers regions[].{id, ttl, up|io|rs|rsf|api|uc}.domains', async () => {
    // storagev2/region/all.go: regionsResponse{Regions []singleRegion "regions"}; singleRegion{ID "id", Ttl "ttl",
    // Io, Up, Rs, Rsf, Api, Uc v4QueryServiceHosts{Domains "domains", Old "old"}}. Without hosts the Go SDK
    // failed "no host found" before sending pfop.
    const url = `${multi.url}/regions`;
    const res = await fetch(url, { headers: { Authorization: qiniu.util.generateAccessTokenV2(multi.mac, url, 'GET', '') } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { regions: Json[] };
    expect(body.regions).toHaveLength(1);
    const r = body.regions[0]!;
    expect(r.id).toBe('z0');
    expect(r.ttl).toEqual(expect.any(Number));
    expect(at(r, 'up', 'domains')).toEqual(UP);
    expect(at(r, 'io', 'domains')).toEqual(IO);
    for (const service of ['rs', 'rsf', 'api', 'uc']) expect(at(r, service, 'domains'), service).toEqual([multi.host]);
  });

  it('storage.getRegionByV4: GET /v4/query for a bucket that does not exist → 631 (query region error)', async () => {
    const { status, body } = await getJson(`${s.url}/v4/query?ak=${AK}&bucket=no-such-bucket`);
    expect([status, body]).toEqual([631, { error: 'no such bucket' }]);
  });
});

describe('python-sdk 7.x', () => {
  it('QueryRegionsProvider: GET /v4/query answers hosts[].{region, ttl, s3.region_alias, <service>.domains, up.acc_domains}', async () => {
    // regions_provider.py _get_region_from_query: data.get(dsn, {}).get('domains', []) for every ServiceName,
    // ('up', 'acc_domains') for UP_ACC, data.get('region'), data.get('s3', {}).get('region_alias'), data.get('ttl').
    const { status, body } = await getJson(`${s.url}/v4/query?ak=${AK}&bucket=${BUCKET}`);
    expect(status).toBe(200);
    const h = (body.hosts as Json[])[0]!;
    expect(h).toMatchObject({ region: 'z0', ttl: expect.any(Number), s3: { region_alias: 'z0' }, up: { acc_domains: [] } });
    for (const service of ['up', 'io', 'io_src', 'rs', 'rsf', 'api', 'uc', 's3']) expect(at(h, service, 'domains'), service).toEqual([s.host]);
  });

  it('QueryRegionsProvider: GET /v4/query for a bucket that does not exist → 631 (its test expects an error)', async () => {
    const { status } = await getJson(`${s.url}/v4/query?ak=${AK}&bucket=no-such-bucket`);
    expect(status).toBe(631);
  });
});

describe('qiniu (Node) 7.x and qiniu-js 3.x', () => {
  it('Node QueryRegionsProvider resolves the advertised up hosts in order from /v4/query', async () => {
    const ep = new qiniu.httpc.Endpoint(multi.host, { defaultScheme: 'http' });
    const provider = new qiniu.httpc.QueryRegionsProvider({
      accessKey: AK,
      bucketName: BUCKET,
      endpointsProvider: new qiniu.httpc.StaticEndpointsProvider([ep]),
      preferredScheme: 'http',
    });
    const [region] = await provider.getRegions();
    const services = (region as unknown as { services: Record<string, Array<{ host: string }>> }).services;
    expect(services.up!.map((e) => e.host)).toEqual(UP);
  });

  it('Node QueryRegionsProvider rejects a bucket that does not exist with the 631 answer', async () => {
    const ep = new qiniu.httpc.Endpoint(s.host, { defaultScheme: 'http' });
    const provider = new qiniu.httpc.QueryRegionsProvider({
      accessKey: AK,
      bucketName: 'no-such-bucket',
      endpointsProvider: new qiniu.httpc.StaticEndpointsProvider([ep]),
      preferredScheme: 'http',
    });
    await expect(provider.getRegions()).rejects.toThrow(/Query regions failed with HTTP Status Code 631.*no such bucket/);
  });

  it('qiniu-js getUpHosts: GET /v2/query answers up.acc.main + up.acc.backup', async () => {
    // qiniu-js src/api: `${protocol}://api.qiniu.com/v2/query?ak=&bucket=` → data.up.acc.main, data.up.acc.backup.
    const { body } = await getJson(`${multi.url}/v2/query?ak=${AK}&bucket=${BUCKET}`);
    expect([...(at(body, 'up', 'acc', 'main') as string[]), ...(at(body, 'up', 'acc', 'backup') as string[])]).toEqual(UP);
  });
});

describe('GRANARY_<SERVICE>_HOSTS', () => {
  it('takes comma-separated host[:port] lists and refuses a scheme, a path, a bad port or an empty list, naming the variable', () => {
    expect(loadConfig({ GRANARY_UP_HOSTS: ' a.test:1, [::1]:9000 ,a.test:1' }).advertisedHosts).toEqual({ up: ['a.test:1', '[::1]:9000'] });
    for (const bad of ['http://a.test', 'a.test/x', 'a.test:0', 'a.test:70000', ' , ']) {
      expect(() => loadConfig({ GRANARY_RS_HOSTS: bad }), bad).toThrow(/GRANARY_RS_HOSTS/);
    }
    expect(loadConfig({}).advertisedHosts).toEqual({});
  });
});
