/**
 * The commands of a job (jobs/commands.ts): `;` splitting, the trailing `|saveas/<EncodedEntryURI>`, parse errors
 * naming the command, and the generated output key (docs/development/kodo-protocol.md §9.2 shape).
 */
import { describe, expect, it } from 'vitest';
import { urlsafeB64Encode } from '../../src/auth/base64.js';
import { commandStages, generatedKey, splitCommands } from '../../src/jobs/commands.js';

const entry = (s: string): string => urlsafeB64Encode(s);

describe('job commands', () => {
  it('splits on ; and separates saveas (bucket:key, bucket only, empty key)', () => {
    const cmds = splitCommands(` imageInfo ;;imageView2/2/w/10|saveas/${entry('b:k/x.jpg')};imageAve|saveas/${entry('b')};exif|saveas/${entry('b:')}`);
    expect(cmds).toEqual([
      { cmd: 'imageInfo', pipeline: 'imageInfo' },
      { cmd: `imageView2/2/w/10|saveas/${entry('b:k/x.jpg')}`, pipeline: 'imageView2/2/w/10', saveas: { bucket: 'b', key: 'k/x.jpg' } },
      { cmd: `imageAve|saveas/${entry('b')}`, pipeline: 'imageAve', saveas: { bucket: 'b' } },
      { cmd: `exif|saveas/${entry('b:')}`, pipeline: 'exif', saveas: { bucket: 'b', key: '' } },
    ]);
    expect(commandStages(cmds[1]!).map((s) => s.name)).toEqual(['imageView2']);
  });

  it('refuses empty fops, saveas in the middle or alone, bad entries, unknown commands (400 naming them)', () => {
    const bad = (text: string, msg: RegExp): void => {
      let err: unknown;
      try {
        for (const c of splitCommands(text)) commandStages(c);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ status: 400, message: expect.stringMatching(msg) });
    };
    bad(' ; ', /no command/);
    bad(`saveas/${entry('b:k')}|imageInfo`, /saveas must end/);
    bad(`saveas/${entry('b:k')}`, /saveas without a command/);
    bad('imageInfo|saveas/@@@', /imageInfo/);
    bad('imageInfo;whatIsThis/1', /whatIsThis/);
    bad(Array.from({ length: 21 }, () => 'imageInfo').join(';'), /at most 20/);
  });

  it('generates <28-char urlsafe-b64 SHA-1>/<source hash>, the same for the same command and source', () => {
    const k = generatedKey('imageView2/2/w/10', 'FhashOfSource');
    expect(k).toMatch(/^[A-Za-z0-9_-]{27}=\/FhashOfSource$/);
    expect(generatedKey('imageView2/2/w/10', 'FhashOfSource')).toBe(k);
    expect(generatedKey('imageView2/2/w/11', 'FhashOfSource')).not.toBe(k);
  });
});
