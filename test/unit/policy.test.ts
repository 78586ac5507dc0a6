import { readFileSync } from 'node:fs';
import qiniu from 'qiniu';
import { describe, expect, it } from 'vitest';
import { urlsafeB64DecodeText } from '../../src/auth/base64.js';
import { KodoError } from '../../src/errors.js';
import { expiryFromDays } from '../../src/policy/expiry.js';
import { checkMimeLimit, detectMimeType, sniffContentMime } from '../../src/policy/mime.js';
import {
  checkDeadline,
  checkSizeLimits,
  isJsonBodyType,
  parsePutPolicy,
  type PutPolicy,
} from '../../src/policy/put-policy.js';
import { checkKeyAllowed, insertSemantics, resolveKey } from '../../src/policy/scope.js';
import {
  referencedVariables,
  renderFormTemplate,
  renderJsonTemplate,
  renderSaveKey,
  type SaveKeyVars,
  type UploadVars,
} from '../../src/policy/template.js';

const JPEG = readFileSync('/work/shared/fixtures/images/Canon_40D.jpg');
const JPEG_HEAD = JPEG.subarray(0, 4100);
const TEXT = Buffer.from('hello world\nsecond line: ünïcödé\n', 'utf8');
const DEADLINE = 2_000_000_000;

/** Runs `fn` and returns the KodoError it throws (fails the test otherwise). */
function kodoError(fn: () => unknown): KodoError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KodoError);
    return err as KodoError;
  }
  throw new Error('expected a KodoError');
}

function expectKodo(fn: () => unknown, status: number, kind: string, messagePart?: string): void {
  const err = kodoError(fn);
  expect(err.status).toBe(status);
  expect(err.kind).toBe(kind);
  if (messagePart !== undefined) expect(err.message).toContain(messagePart);
}

/** The policy JSON exactly as the Node SDK puts it in an upload token. */
function sdkPolicy(options: Record<string, string | number | boolean>): Record<string, unknown> {
  const mac = new qiniu.auth.digest.Mac('ak', 'sk');
  const token = new qiniu.rs.PutPolicy({ scope: 'bucket', ...options }).uploadToken(mac);
  const encoded = token.slice(token.lastIndexOf(':') + 1);
  return JSON.parse(urlsafeB64DecodeText(encoded)) as Record<string, unknown>;
}

function policy(fields: Record<string, unknown>): PutPolicy {
  return parsePutPolicy({ scope: 'bucket', deadline: DEADLINE, ...fields });
}

const putTimeMs = Date.UTC(2024, 11, 31, 16, 5, 9); // 2025-01-01 00:05:09 in Beijing time

function saveKeyVars(over: Partial<SaveKeyVars> = {}): SaveKeyVars {
  return {
    bucket: 'bkt',
    fname: 'photo.jpg',
    etag: 'FhashValue',
    fsize: 1234,
    mimeType: 'image/jpeg',
    custom: {},
    putTimeMs,
    ...over,
  };
}

function uploadVars(over: Partial<UploadVars> = {}): UploadVars {
  return { ...saveKeyVars(), key: 'k', ...over };
}

describe('parsePutPolicy', () => {
  it('accepts the policy the Node SDK sends, with the right names and types', () => {
    const raw = sdkPolicy({
      scope: 'bkt:dir/',
      isPrefixalScope: 1,
      expires: 7200,
      insertOnly: 1,
      saveKey: '$(etag)$(ext)',
      forceSaveKey: true,
      endUser: 'user-1',
      returnBody: '{"key":$(key),"hash":$(etag)}',
      callbackUrl: 'http://a.example/cb;http://b.example/cb',
      callbackHost: 'a.example',
      callbackBody: '{"key":"$(key)"}',
      callbackBodyType: 'application/json',
      callbackFetchKey: 1,
      persistentOps: 'avinfo|saveas/YmtOm91dA==',
      persistentNotifyUrl: 'http://n.example/',
      persistentPipeline: 'pipe',
      persistentType: 1,
      fsizeMin: 1,
      fsizeLimit: 1048576,
      mimeLimit: 'image/*',
      detectMime: 1,
      deleteAfterDays: 7,
      fileType: 1,
      trafficLimit: 819200,
    });
    // The SDK computes deadline = now + expires and never sends `expires`.
    expect(raw).not.toHaveProperty('expires');
    expect(typeof raw.deadline).toBe('number');

    const p = parsePutPolicy(raw);
    expect(p).toMatchObject({
      scope: 'bkt:dir/',
      bucket: 'bkt',
      scopeKey: 'dir/',
      isPrefixalScope: true,
      deadline: raw.deadline,
      insertOnly: true,
      saveKey: '$(etag)$(ext)',
      forceSaveKey: true,
      endUser: 'user-1',
      returnBody: '{"key":$(key),"hash":$(etag)}',
      callbackUrl: 'http://a.example/cb;http://b.example/cb',
      callbackHost: 'a.example',
      callbackBody: '{"key":"$(key)"}',
      callbackBodyType: 'application/json',
      callbackFetchKey: true,
      persistentOps: 'avinfo|saveas/YmtOm91dA==',
      persistentNotifyUrl: 'http://n.example/',
      persistentPipeline: 'pipe',
      persistentType: 1,
      fsizeMin: 1,
      fsizeLimit: 1048576,
      mimeLimit: 'image/*',
      detectMime: 1,
      deleteAfterDays: 7,
      fileType: 1,
      trafficLimit: 819200,
    });
  });

  it('fills defaults and leaves unset fields absent for a minimal SDK policy', () => {
    const p = parsePutPolicy(sdkPolicy({ scope: 'bkt' }));
    expect(p.bucket).toBe('bkt');
    expect(p).not.toHaveProperty('scopeKey');
    expect(p).toMatchObject({
      isPrefixalScope: false,
      insertOnly: false,
      forceSaveKey: false,
      callbackFetchKey: false,
      persistentType: 0,
      detectMime: 0,
      fileType: 0,
    });
    for (const k of ['returnBody', 'saveKey', 'fsizeLimit', 'keylimit', 'trafficLimit', 'deleteAfterDays']) {
      expect(p).not.toHaveProperty(k);
    }
  });

  it('splits scope on the first colon', () => {
    expect(policy({ scope: 'b:k:with:colons' })).toMatchObject({ bucket: 'b', scopeKey: 'k:with:colons' });
    expect(policy({ scope: 'b:' })).toMatchObject({ bucket: 'b', scopeKey: '' });
  });

  it('is lenient on input types and ignores unknown fields', () => {
    const p = parsePutPolicy({
      scope: 'b',
      deadline: String(DEADLINE),
      insertOnly: 'true',
      isPrefixalScope: '1',
      forceSaveKey: 1,
      saveKey: 'x',
      callbackFetchKey: false,
      fsizeLimit: ' 2048 ',
      detectMime: '-1',
      fileType: '4',
      endUser: 42,
      transform: 'imageView2/1', // deprecated, ignored
      checksum: 'SHA1:xx',
      somethingNew: { nested: true },
    });
    expect(p).toMatchObject({
      deadline: DEADLINE,
      insertOnly: true,
      isPrefixalScope: true,
      forceSaveKey: true,
      callbackFetchKey: false,
      fsizeLimit: 2048,
      detectMime: -1,
      fileType: 4,
      endUser: '42',
    });
    expect(p).not.toHaveProperty('somethingNew');
    expect(policy({ insertOnly: 2 }).insertOnly).toBe(true);
    expect(policy({ detectMime: 3 }).detectMime).toBe(1);
  });

  it('treats zero, empty and null values as unset', () => {
    const p = policy({
      fsizeLimit: 0,
      fsizeMin: 0,
      trafficLimit: 0,
      deleteAfterDays: 0,
      saveKey: '',
      returnBody: '',
      endUser: null,
      keylimit: [],
      callbackUrl: '',
    });
    for (const k of ['fsizeLimit', 'fsizeMin', 'trafficLimit', 'deleteAfterDays', 'saveKey', 'returnBody', 'endUser',
      'keylimit', 'callbackUrl']) {
      expect(p).not.toHaveProperty(k);
    }
  });

  it.each([
    [{ scope: undefined }, 'scope'],
    [{ scope: '' }, 'scope'],
    [{ scope: 42 }, 'scope'],
    [{ scope: ':key' }, 'scope'],
    [{ deadline: undefined }, 'deadline'],
    [{ deadline: 0 }, 'deadline'],
    [{ deadline: -5 }, 'deadline'],
    [{ deadline: 1.5 }, 'deadline'],
    [{ deadline: 'soon' }, 'deadline'],
    [{ deadline: 2 ** 32 }, 'deadline'],
    [{ forceSaveKey: true }, 'forceSaveKey'],
    [{ forceSaveKey: true, saveKey: '' }, 'forceSaveKey'],
    [{ forceSaveKey: 'maybe', saveKey: 'k' }, 'forceSaveKey'],
    [{ callbackUrl: 'http://cb.example/' }, 'callbackUrl'],
    [{ callbackUrl: 'http://cb.example/', callbackBody: '' }, 'callbackUrl'],
    [{ trafficLimit: 819199 }, 'trafficLimit'],
    [{ trafficLimit: 838860801 }, 'trafficLimit'],
    [{ fileType: 6 }, 'fileType'],
    [{ fileType: -1 }, 'fileType'],
    [{ fileType: 2, persistentOps: 'avinfo' }, 'persistentOps'],
    [{ fileType: 3, persistentOps: 'avinfo' }, 'persistentOps'],
    [{ persistentOps: 'avinfo', persistentWorkflowTemplateID: 'wf' }, 'persistentOps'],
    [{ persistentType: 2 }, 'persistentType'],
    [{ fsizeMin: -1 }, 'fsizeMin'],
    [{ fsizeLimit: -1 }, 'fsizeLimit'],
    [{ fsizeMin: 10, fsizeLimit: 5 }, 'fsizeMin'],
    [{ deleteAfterDays: -1 }, 'deleteAfterDays'],
    [{ detectMime: -2 }, 'detectMime'],
    [{ keylimit: 'a' }, 'keylimit'],
    [{ keylimit: ['a', 1] }, 'keylimit'],
    [{ endUser: { id: 1 } }, 'endUser'],
    [{ callbackUrl: 'http://cb/', callbackBody: '{"k":$(key)', callbackBodyType: 'application/json' }, 'callbackBody'],
  ])('rejects %j with 400 naming %s', (fields, field) => {
    expectKodo(() => policy(fields), 400, 'badPutPolicy', field);
  });

  it('accepts the boundary values', () => {
    expect(policy({ trafficLimit: 819200 }).trafficLimit).toBe(819200);
    expect(policy({ trafficLimit: 838860800 }).trafficLimit).toBe(838860800);
    expect(policy({ fileType: 2, persistentWorkflowTemplateID: 'wf' }).fileType).toBe(2);
    expect(policy({ fileType: 4, persistentOps: 'avinfo' }).persistentOps).toBe('avinfo');
    expect(policy({ deadline: 2 ** 32 - 1 }).deadline).toBe(2 ** 32 - 1);
    // Intelligent Tiering (Kodo's type 5).
    expect(policy({ fileType: 5 }).fileType).toBe(5);
    // returnBody need not render to JSON (answered as rendered, as Kodo does), nor with a callback.
    expect(policy({ returnBody: ' ' }).returnBody).toBe(' ');
    expect(policy({ returnBody: 'key=$(key)' }).returnBody).toBe('key=$(key)');
    expect(policy({ returnBody: 'not json', callbackUrl: 'http://cb/', callbackBody: 'a=$(key)' }).callbackUrl).toBe(
      'http://cb/',
    );
    // A form callbackBody is not JSON and need not be.
    expect(policy({ callbackUrl: 'http://cb/', callbackBody: 'k=$(key)&h=$(etag)' }).callbackBody).toBe(
      'k=$(key)&h=$(etag)',
    );
  });

  it('recognises JSON callback body types', () => {
    expect(isJsonBodyType('application/json')).toBe(true);
    expect(isJsonBodyType('Application/JSON; charset=utf-8')).toBe(true);
    expect(isJsonBodyType('application/x-www-form-urlencoded')).toBe(false);
    expect(isJsonBodyType(undefined)).toBe(false);
  });
});

describe('checkDeadline and checkSizeLimits', () => {
  it('expires strictly after the deadline with 401', () => {
    const p = policy({ deadline: 1000 });
    expect(() => checkDeadline(p, 999)).not.toThrow();
    expect(() => checkDeadline(p, 1000)).not.toThrow();
    expectKodo(() => checkDeadline(p, 1001), 401, 'expiredToken');
  });

  it('enforces fsizeMin with 403 and fsizeLimit with 413', () => {
    const p = policy({ fsizeMin: 10, fsizeLimit: 20 });
    expectKodo(() => checkSizeLimits(p, 9), 403, 'fileTooSmall');
    expect(() => checkSizeLimits(p, 10)).not.toThrow();
    expect(() => checkSizeLimits(p, 20)).not.toThrow();
    expectKodo(() => checkSizeLimits(p, 21), 413, 'fileTooLarge');
    expect(() => checkSizeLimits(policy({}), 0)).not.toThrow();
  });
});

describe('renderJsonTemplate', () => {
  it('reproduces the Node SDK integration test (bare placeholders become strings)', () => {
    const out = renderJsonTemplate(
      '{"key":$(key),"hash":$(etag),"fname":$(fname),"var_1":$(x:var_1)}',
      uploadVars({ key: 'k', etag: 'FhXYZ', fname: 'a.txt', custom: { 'x:var_1': 'val_1' } }),
    );
    expect(JSON.parse(out)).toEqual({ key: 'k', hash: 'FhXYZ', fname: 'a.txt', var_1: 'val_1' });
  });

  it('renders quoted placeholders as escaped raw text and bare numbers raw', () => {
    const vars = uploadVars({ key: 'dir/"q"\n\\end', fsize: 1234, mimeType: 'image/jpeg', endUser: 'u1' });
    const out = renderJsonTemplate(
      '{"key":"$(key)","size":$(fsize),"sizeStr":"$(fsize)","mime":"$(mimeType)","who":"user $(endUser)!"}',
      vars,
    );
    expect(JSON.parse(out)).toEqual({
      key: 'dir/"q"\n\\end',
      size: 1234,
      sizeStr: '1234',
      mime: 'image/jpeg',
      who: 'user u1!',
    });
    expect(out).toContain('"size":1234');
  });

  it('renders missing variables as null bare and "" quoted', () => {
    const out = renderJsonTemplate(
      '{"a":$(x:nope),"b":"$(x:nope)","c":$(persistentId),"d":$(imageInfo.width),"e":"$(exif.Model.val)",' +
        '"f":$(year),"g":$(unknownThing),"h":$(endUser)}',
      uploadVars(),
    );
    expect(JSON.parse(out)).toEqual({ a: null, b: '', c: null, d: null, e: '', f: null, g: null, h: null });
  });

  it('accepts ${var}, $(hash), $(uuid) and fills ext/fprefix', () => {
    const out = renderJsonTemplate(
      '{"k":${key},"h":$(hash),"u1":$(uuid),"u2":"$(uuid)","ext":$(ext),"pre":$(fprefix),"b":$(bucket),' +
        '"p":$(persistentId),"s":$(bodySha1)}',
      uploadVars({
        fname: 'archive.tar.gz',
        uuid: () => crypto.randomUUID(),
        persistentId: 'z0.abc',
        bodySha1: 'da39a3ee',
      }),
    );
    const j = JSON.parse(out) as Record<string, unknown>;
    expect(j).toMatchObject({ k: 'k', h: 'FhashValue', ext: '.gz', pre: 'archive.tar', b: 'bkt', p: 'z0.abc' });
    expect(j.s).toBe('da39a3ee');
    expect(j.u1).toMatch(/^[0-9a-f-]{36}$/);
    expect(j.u2).toBe(j.u1); // one UUID per render
  });

  it('derives $(ext) from fname, then key, then MIME type', () => {
    const ext = (over: Partial<UploadVars>): unknown =>
      (JSON.parse(renderJsonTemplate('{"e":$(ext)}', uploadVars(over))) as { e: unknown }).e;
    expect(ext({ fname: 'a.PNG', key: 'b.txt' })).toBe('.PNG');
    expect(ext({ fname: 'fname', key: 'b.txt' })).toBe('.txt');
    expect(ext({ fname: '', key: 'noext', mimeType: 'image/jpeg' })).toBe('.jpg');
    expect(ext({ fname: '', key: 'noext', mimeType: 'application/octet-stream' })).toBe('');
  });

  it('keeps the template formatting and handles placeholders as object keys and in arrays', () => {
    const out = renderJsonTemplate('{ "$(key)" : [ $(fsize), $(key) ] }', uploadVars({ key: 'k', fsize: 7 }));
    expect(out).toBe('{ "k" : [ 7, "k" ] }');
  });

  it('rejects a result that is not JSON with 400', () => {
    expectKodo(() => renderJsonTemplate('key=$(key)', uploadVars()), 400, 'badPutPolicy', 'returnBody');
    expectKodo(
      () => renderJsonTemplate('{"a":$(key)', uploadVars(), 'callbackBody'),
      400,
      'badPutPolicy',
      'callbackBody is not valid JSON after rendering',
    );
  });

  it('does not expand saveKey-only time variables', () => {
    expect(renderJsonTemplate('"$(year)-$(mon)"', uploadVars())).toBe('"-"');
  });
});

describe('renderFormTemplate', () => {
  it('URL-encodes each value and keeps literal text', () => {
    const out = renderFormTemplate(
      'key=$(key)&hash=$(etag)&size=$(fsize)&loc=$(x:location)&none=$(x:none)&lit=a+b%20c',
      uploadVars({ key: 'dir/a b&c=d.txt', custom: { 'x:location': '上海' } }),
    );
    expect(out).toBe(
      'key=dir%2Fa%20b%26c%3Dd.txt&hash=FhashValue&size=1234&loc=%E4%B8%8A%E6%B5%B7&none=&lit=a+b%20c',
    );
    const parsed = new URLSearchParams(out);
    expect(parsed.get('key')).toBe('dir/a b&c=d.txt');
    expect(parsed.get('loc')).toBe('上海');
  });
});

describe('renderSaveKey', () => {
  it('substitutes time variables in Beijing time, zero-padded', () => {
    // putTimeMs is 2024-12-31T16:05:09Z = 2025-01-01 00:05:09 CST.
    expect(renderSaveKey('$(year)/$(mon)/$(day)/$(hour)$(min)$(sec)', saveKeyVars())).toBe('2025/01/01/000509');
  });

  it('substitutes plain values without escaping', () => {
    const vars = saveKeyVars({ fname: 'my photo.jpg', endUser: 'u/1', custom: { 'x:dir': 'a&b' } });
    expect(renderSaveKey('$(x:dir)/$(endUser)/$(fprefix)-$(etag)$(ext)', vars)).toBe(
      'a&b/u/1/my photo-FhashValue.jpg',
    );
    expect(renderSaveKey('$(bucket)/$(fsize)/$(mimeType)', vars)).toBe('bkt/1234/image/jpeg');
  });

  it('takes $(ext) from the MIME type when fname has none, and renders unavailable variables empty', () => {
    expect(renderSaveKey('$(etag)$(ext)', saveKeyVars({ fname: 'fname', mimeType: 'image/png' }))).toBe(
      'FhashValue.png',
    );
    expect(renderSaveKey('a$(key)b$(uuid)c$(persistentId)d$(x:missing)e', saveKeyVars())).toBe('abcde');
  });

  it('lists referenced variables', () => {
    expect(referencedVariables('$(key)/${ x:a }/$(imageInfo.width)/$(key)')).toEqual([
      'key',
      'x:a',
      'imageInfo.width',
    ]);
  });
});

describe('scope', () => {
  const vars = saveKeyVars({ etag: 'Fetag' });

  it('resolves the key in order: client key, saveKey, etag', () => {
    expect(resolveKey(policy({}), 'client', vars)).toBe('client');
    expect(resolveKey(policy({}), '', vars)).toBe(''); // empty form key is a real key
    expect(resolveKey(policy({ saveKey: 'sk/$(etag)' }), 'client', vars)).toBe('client');
    expect(resolveKey(policy({ saveKey: 'sk/$(etag)' }), undefined, vars)).toBe('sk/Fetag');
    expect(resolveKey(policy({}), undefined, vars)).toBeUndefined();
    // A saveKey rendering to "" falls back to the etag.
    expect(resolveKey(policy({ saveKey: '$(x:missing)' }), undefined, vars)).toBeUndefined();
  });

  it('forceSaveKey ignores the client key', () => {
    const p = policy({ saveKey: 'forced/$(etag)', forceSaveKey: true });
    expect(resolveKey(p, 'client', vars)).toBe('forced/Fetag');
    expect(resolveKey(p, '', vars)).toBe('forced/Fetag');
  });

  it('exact scope with no key resolved → 403; prefix scope leaves the etag to checkKeyAllowed', () => {
    expectKodo(() => resolveKey(policy({ scope: 'bucket:k' }), undefined, vars), 403, 'scopeMismatch');
    expect(resolveKey(policy({ scope: 'bucket:k', saveKey: 'k' }), undefined, vars)).toBe('k');
    expect(resolveKey(policy({ scope: 'bucket:pre/', isPrefixalScope: 1 }), undefined, vars)).toBeUndefined();
  });

  it('checks keys against bucket, exact and prefix scopes', () => {
    expect(() => checkKeyAllowed(policy({ scope: 'bucket' }), 'anything')).not.toThrow();
    expect(() => checkKeyAllowed(policy({ scope: 'bucket' }), '')).not.toThrow();

    const exact = policy({ scope: 'bucket:a/b.txt' });
    expect(() => checkKeyAllowed(exact, 'a/b.txt')).not.toThrow();
    expectKodo(() => checkKeyAllowed(exact, 'a/b.txt2'), 403, 'scopeMismatch', "key doesn't match with scope");
    expectKodo(() => checkKeyAllowed(exact, 'a/'), 403, 'scopeMismatch');

    const emptyKey = policy({ scope: 'bucket:' });
    expect(() => checkKeyAllowed(emptyKey, '')).not.toThrow();
    expectKodo(() => checkKeyAllowed(emptyKey, 'x'), 403, 'scopeMismatch');

    const prefix = policy({ scope: 'bucket:img/', isPrefixalScope: 1 });
    expect(() => checkKeyAllowed(prefix, 'img/')).not.toThrow();
    expect(() => checkKeyAllowed(prefix, 'img/a.jpg')).not.toThrow();
    expectKodo(() => checkKeyAllowed(prefix, 'im'), 403, 'scopeMismatch');
    expectKodo(() => checkKeyAllowed(prefix, 'doc/img/a.jpg'), 403, 'scopeMismatch');
  });

  it('enforces keylimit with 403', () => {
    const p = policy({ keylimit: ['a.txt', 'b.txt'] });
    expect(() => checkKeyAllowed(p, 'a.txt')).not.toThrow();
    expectKodo(() => checkKeyAllowed(p, 'c.txt'), 403, 'keyNotAllowed');
  });

  it('limits keys to 750 bytes of UTF-8 (400)', () => {
    const p = policy({});
    expect(() => checkKeyAllowed(p, 'a'.repeat(750))).not.toThrow();
    expectKodo(() => checkKeyAllowed(p, 'a'.repeat(751)), 400, 'keyTooLong');
    expect(() => checkKeyAllowed(p, '中'.repeat(250))).not.toThrow(); // 750 bytes
    expectKodo(() => checkKeyAllowed(p, `${'中'.repeat(250)}a`), 400, 'keyTooLong'); // 751 bytes, 251 chars
    // Length is checked before the scope.
    expectKodo(() => checkKeyAllowed(policy({ scope: 'bucket:k' }), 'a'.repeat(751)), 400, 'keyTooLong');
  });

  it('decides insert semantics', () => {
    expect(insertSemantics(policy({ scope: 'bucket' }))).toBe(true);
    expect(insertSemantics(policy({ scope: 'bucket:k' }))).toBe(false);
    expect(insertSemantics(policy({ scope: 'bucket:k', insertOnly: 1 }))).toBe(true);
    expect(insertSemantics(policy({ scope: 'bucket:pre', isPrefixalScope: 1 }))).toBe(true);
    expect(insertSemantics(policy({ scope: 'bucket:' }))).toBe(false);
  });
});

describe('MIME detection', () => {
  it('sniffs content', async () => {
    expect(await sniffContentMime(JPEG_HEAD)).toBe('image/jpeg');
    expect(await sniffContentMime(TEXT)).toBe('text/plain');
    expect(await sniffContentMime(Buffer.alloc(0))).toBeUndefined();
    expect(await sniffContentMime(Buffer.from([0x00, 0x01, 0xff, 0xfe, 0x80]))).toBeUndefined();
    // A multi-byte character cut at the end of the sampled head is still text.
    const cut = Buffer.from('abc中', 'utf8').subarray(0, 5);
    expect(await sniffContentMime(cut)).toBe('text/plain');
  });

  it('detectMime 0: client type, unless absent or octet-stream; then fname, key, content', async () => {
    expect(await detectMimeType({ detectMime: 0, clientMime: 'image/png', fname: 'a.txt', head: JPEG_HEAD })).toBe(
      'image/png',
    );
    // Node's default octet-stream counts as unspecified; its default fname "fname" has no extension.
    expect(
      await detectMimeType({ detectMime: 0, clientMime: 'application/octet-stream', fname: 'fname', key: 'photo', head: JPEG_HEAD }),
    ).toBe('image/jpeg');
    expect(await detectMimeType({ detectMime: 0, fname: 'a.txt', head: JPEG_HEAD })).toBe('text/plain');
    expect(await detectMimeType({ detectMime: 0, fname: 'noext', key: 'dir/x.json', head: TEXT })).toBe(
      'application/json',
    );
    expect(await detectMimeType({ detectMime: 0, key: 'k', head: TEXT })).toBe('text/plain');
    expect(await detectMimeType({ detectMime: 0, key: 'k', head: Buffer.alloc(0) })).toBe('application/octet-stream');
    expect(await detectMimeType({ detectMime: 0, key: 'k.png', head: Buffer.alloc(0) })).toBe('image/png');
    expect(await detectMimeType({ detectMime: 0, key: 'k', head: Buffer.from([0, 1, 2, 0xff]) })).toBe(
      'application/octet-stream',
    );
  });

  it('detectMime 1: content first, then fname, then key', async () => {
    expect(await detectMimeType({ detectMime: 1, clientMime: 'text/plain', fname: 'a.txt', head: JPEG_HEAD })).toBe(
      'image/jpeg',
    );
    expect(await detectMimeType({ detectMime: 1, fname: 'a.jpg', head: TEXT })).toBe('text/plain');
    // Generic text content + a text-format extension → the extension's precise type.
    expect(await detectMimeType({ detectMime: 1, fname: 'data.json', head: Buffer.from('{"a":1}') })).toBe(
      'application/json',
    );
    expect(await detectMimeType({ detectMime: 1, key: 'a.png', head: Buffer.alloc(0) })).toBe('image/png');
    expect(await detectMimeType({ detectMime: 1, head: Buffer.alloc(0) })).toBe('application/octet-stream');
  });

  it('detectMime -1: the client type verbatim', async () => {
    expect(await detectMimeType({ detectMime: -1, clientMime: 'foo/bar', fname: 'a.jpg', head: JPEG_HEAD })).toBe(
      'foo/bar',
    );
    expect(
      await detectMimeType({ detectMime: -1, clientMime: 'application/octet-stream', head: JPEG_HEAD }),
    ).toBe('application/octet-stream');
    expect(await detectMimeType({ detectMime: -1, fname: 'a.jpg', head: JPEG_HEAD })).toBe('application/octet-stream');
  });
});

describe('checkMimeLimit', () => {
  it('allows everything when unset', () => {
    expect(() => checkMimeLimit(undefined, 'anything/at-all')).not.toThrow();
    expect(() => checkMimeLimit('', 'anything/at-all')).not.toThrow();
  });

  it('applies an allow list with wildcards', () => {
    expect(() => checkMimeLimit('image/*', 'image/jpeg')).not.toThrow();
    expect(() => checkMimeLimit('image/jpeg;image/png', 'image/png')).not.toThrow();
    expect(() => checkMimeLimit('image/jpeg; image/png', 'IMAGE/PNG')).not.toThrow();
    expect(() => checkMimeLimit('text/plain', 'text/plain; charset=utf-8')).not.toThrow();
    expectKodo(() => checkMimeLimit('image/*', 'text/plain'), 403, 'limitedMimeType', 'limited mimeType: text/plain');
    expectKodo(() => checkMimeLimit('image/jpeg;image/png', 'image/gif'), 403, 'limitedMimeType');
    // `*` does not let `image/` match `imagex/…`
    expectKodo(() => checkMimeLimit('image/*', 'imagex/png'), 403, 'limitedMimeType');
  });

  it('applies a deny list with a leading !', () => {
    expectKodo(() => checkMimeLimit('!application/json;text/plain', 'text/plain'), 403, 'limitedMimeType');
    expectKodo(() => checkMimeLimit('!application/json;text/plain', 'application/json'), 403, 'limitedMimeType');
    expect(() => checkMimeLimit('!application/json;text/plain', 'image/jpeg')).not.toThrow();
    expectKodo(() => checkMimeLimit('!image/*', 'image/jpeg'), 403, 'limitedMimeType');
    expect(() => checkMimeLimit('!image/*', 'video/mp4')).not.toThrow();
  });
});

describe('expiryFromDays', () => {
  const utcSec = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0): number =>
    Date.UTC(y, mo - 1, d, h, mi, s) / 1000;

  it("matches Qiniu's documented example", () => {
    // Uploaded 2015-01-01 10:00 CST (02:00 UTC), 3 days → 2015-01-05 00:00 CST = 2015-01-04 16:00 UTC.
    expect(expiryFromDays(utcSec(2015, 1, 1, 2) * 1000, 3)).toBe(1420387200);
    expect(utcSec(2015, 1, 4, 16)).toBe(1420387200);
  });

  it('rounds up to the next CST midnight (not UTC midnight)', () => {
    // 2015-01-01 23:59:59 CST + 1 day → 2015-01-03 00:00 CST.
    expect(expiryFromDays(utcSec(2015, 1, 1, 15, 59, 59) * 1000, 1)).toBe(utcSec(2015, 1, 2, 16));
    // 2015-01-02 00:00:01 CST + 1 day → 2015-01-04 00:00 CST.
    expect(expiryFromDays(utcSec(2015, 1, 1, 16, 0, 1) * 1000, 1)).toBe(utcSec(2015, 1, 3, 16));
    // Exactly 2015-01-02 00:00:00.000 CST + 1 day lands on a midnight → the following one.
    expect(expiryFromDays(utcSec(2015, 1, 1, 16) * 1000, 1)).toBe(utcSec(2015, 1, 3, 16));
    // One millisecond before that midnight → that midnight.
    expect(expiryFromDays(utcSec(2015, 1, 1, 16) * 1000 - 1, 1)).toBe(utcSec(2015, 1, 2, 16));
    // 00:00 UTC is 08:00 CST: + 1 day → next CST midnight, which is 16:00 UTC, not 00:00 UTC.
    expect(expiryFromDays(utcSec(2015, 1, 1) * 1000, 1)).toBe(utcSec(2015, 1, 2, 16));
  });

  it('returns whole Unix seconds and rejects bad day counts', () => {
    const t = expiryFromDays(1_700_000_123_456, 30);
    expect(Number.isInteger(t)).toBe(true);
    expect((t + 8 * 3600) % 86400).toBe(0);
    expect(() => expiryFromDays(0, -1)).toThrow(RangeError);
    expect(() => expiryFromDays(0, 1.5)).toThrow(RangeError);
  });
});
