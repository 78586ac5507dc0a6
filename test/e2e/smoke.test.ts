import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import qiniu from 'qiniu';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';

describe('smoke', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s.stop());

  it('creates a bucket, uploads and downloads', async () => {
    const bm = s.bucketManager();
    const created = await sdk(bm.createBucket('smoke', { regionId: 'z0' }));
    expect(created.status).toBe(200);
    const token = s.uploadToken({ scope: 'smoke' });
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    const r = await sdk<{ key: string; hash: string }>(up.put(token, 'hello.txt', Buffer.from('abc'), new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ key: 'hello.txt', hash: 'FqmZPjZHBoFquj4lcXhQwmyc0Nid' });
    const res = await fetch(`${s.url}/smoke/hello.txt`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('abc');
  });
});
