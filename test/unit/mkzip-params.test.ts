/**
 * mkzip's parameter parsing (src/fops/files/mkzip-params.ts; docs/development/kodo-protocol.md §10.9): modes 2
 * and 4, encodings, aliases and default names, the 2,048-byte bound of mode 2, index files, and 400s.
 */
import { describe, expect, it } from 'vitest';
import { urlsafeB64Encode as b64 } from '../../src/auth/base64.js';
import { MODE2_MAX_CHARS, parseIndexFile, parseMkzip } from '../../src/fops/files/mkzip-params.js';

const U = 'http://127.0.0.1:9000/b/dir/%E6%96%87.txt';

describe('mkzip parameters', () => {
  it('mode 2: urls with and without alias, encoding anywhere once, default utf-8', () => {
    expect(parseMkzip(['2', 'url', b64(U), 'url', b64('http://x/y.bin'), 'alias', b64('a/b.bin')])).toEqual({
      mode: 2,
      encoding: 'utf-8',
      items: [
        { url: U, fallbackName: 'b/dir/文.txt' },
        { url: 'http://x/y.bin', alias: 'a/b.bin', fallbackName: 'y.bin' },
      ],
    });
    expect(parseMkzip(['2', 'encoding', b64('gbk'), 'url', b64(U)])).toMatchObject({ encoding: 'gbk' });
    expect(parseMkzip(['2', 'url', b64(U), 'encoding', b64('UTF-8')])).toMatchObject({ encoding: 'utf-8' });
  });

  it('mode 4: no urls in the command; the index file lists them, blank lines and CRLF allowed', () => {
    expect(parseMkzip(['4'])).toEqual({ mode: 4, encoding: 'utf-8' });
    const index = `/url/${b64(U)}/alias/${b64('x.txt')}\r\n\r\n/url/${b64('http://x/z')}\n`;
    expect(parseIndexFile(Buffer.from(index), 10)).toEqual([
      { url: U, alias: 'x.txt', fallbackName: 'b/dir/文.txt' },
      { url: 'http://x/z', fallbackName: 'z' },
    ]);
  });

  it('400 on bad input', () => {
    const bad = (args: string[]): void => expect(() => parseMkzip(args)).toThrow(/mkzip: /);
    bad([]);
    bad(['3']);
    bad(['2']);
    bad(['2', 'url']);
    bad(['2', 'alias', b64('x'), 'url', b64(U)]);
    bad(['2', 'url', b64(U), 'alias', b64('../x')]);
    bad(['2', 'url', b64(U), 'alias', b64('/abs')]);
    bad(['2', 'url', b64('ftp://x/y')]);
    bad(['2', 'url', b64(U), 'encoding', b64('latin1')]);
    bad(['2', 'url', b64(U), 'encoding', b64('gbk'), 'encoding', b64('gbk')]);
    bad(['2', 'url', b64(U), 'size', '1']);
    bad(['4', 'url', b64(U)]);
    bad(['2', ...Array.from({ length: 40 }, () => ['url', b64(`${U}?${'x'.repeat(40)}`)]).flat()]);
    expect(['2', 'url', b64(U)].join('/').length).toBeLessThan(MODE2_MAX_CHARS);
    expect(() => parseIndexFile(Buffer.from('\n\n'), 10)).toThrow(/lists no url/);
    expect(() => parseIndexFile(Buffer.from(`/url/${b64(U)}\n`.repeat(3)), 2)).toThrow(/more than 2/);
    expect(() => parseIndexFile(Buffer.from(`/url/${b64(U)}\nnonsense\n`), 10)).toThrow(/index line 2/);
  });
});
