/**
 * The pure parts of the HLS and multi-object video commands (docs/development/kodo-protocol.md §10.6): HLS
 * parameters and argv, segment key patterns, pm3u8's playlist rewriting, vsample's and avconcat's parameters and
 * argv.
 */
import { describe, expect, it } from 'vitest';
import { parsePipeline } from '../../src/fops/registry.js';
import type { BucketUrls } from '../../src/fops/types.js';
import { avconcatArgs, parseAvconcat } from '../../src/fops/video/avconcat-args.js';
import { hlsArgs, keyInfoText, parseHls } from '../../src/fops/video/hls-args.js';
import { defaultSegmentPattern } from '../../src/fops/video/hls.js';
import { parseKeyPattern, patternKey } from '../../src/fops/video/key-pattern.js';
import { parsePm3u8, signPlaylist } from '../../src/fops/video/pm3u8.js';
import { parseVsample, vsampleArgs } from '../../src/fops/video/vsample.js';
import { status400 } from '../helpers/errors.js';

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
const KEY = Buffer.from('0123456789abcdef');

describe('avthumb/m3u8 parameters and argv', () => {
  it('takes the avthumb parameters plus the HLS ones, with their defaults', () => {
    const p = parseHls(['m3u8', 's', '320x240', 'vcodec', 'libx264']);
    expect(p).toMatchObject({ kind: 'hls', segMs: 10_000, noDomain: false, av: { format: 'm3u8', size: { w: 320, h: 240 }, vcodec: 'libx264' } });
    const q = parseHls(['hls', 'segtime', '4', 'segFirstTime', '2', 'hlsKey', b64(KEY), 'hlsKeyType', '0', 'hlsKeyUrl', b64('https://k.example/k'), 'hlsIV', b64(KEY), 'savePattern', b64('s/$(count).ts')]);
    expect(q).toMatchObject({ segMs: 4000, segFirstMs: 2000, keyUrl: 'https://k.example/k', iv: KEY.toString('hex'), pattern: 's/$(count).ts' });
    expect(q.key?.equals(KEY)).toBe(true);
    expect(parseHls(['m3u8', 'domain', b64('cdn.example.com/')]).domain).toBe('http://cdn.example.com');
  });

  it('refuses bad values with 400 naming them', () => {
    for (const [args, msg] of [
      [['m3u8', 'segtime', '121'], /segtime must be between 2 and 120/],
      [['m3u8', 'segFirstTime', '0.5'], /segFirstTime must be between 1 and 120/],
      [['m3u8', 'noDomain', '2'], /noDomain must be 0 or 1/],
      [['m3u8', 'domain', b64('a b')], /domain must be a host name/],
      [['m3u8', 'hlsKey', b64('short')], /hlsKey must be 16 bytes/],
      [['m3u8', 'hlsKeyType', '1.0'], /hlsKeyType "1.0" is not supported/],
      [['m3u8', 'hlsKeyUrl', b64('http://k')], /need hlsKey/],
      [['m3u8', 'hlsKeyUrl', b64('http://k"x')], /without control characters or quotes/],
      [['m3u8', 'segtime', '4', 'segtime', '5'], /segtime given twice/],
      [['m3u8', 'bogus', '1'], /unknown parameter "bogus"/],
      [['m3u8', 'vcodec', 'gif'], /cannot hold that codec/],
    ] as const) {
      status400(() => parseHls([...args]), msg);
    }
  });

  it('builds the hls muxer options before the playlist, with the key info file when encrypting', () => {
    const p = parseHls(['m3u8', 'segtime', '4', 'segFirstTime', '2', 'hlsKey', b64(KEY), 'hlsKeyUrl', b64('https://k/k')]);
    const args = hlsArgs(p, { input: '/in', output: '/d/index.m3u8', font: '/f.ttf', segmentTemplate: '/d/%06d.ts', keyInfo: '/d/key.info' }, 2);
    expect(args.at(-1)).toBe('file:/d/index.m3u8');
    const at = (o: string): string | undefined => args[args.indexOf(o) + 1];
    expect(at('-f')).toBe('hls');
    expect(at('-hls_time')).toBe('4');
    expect(at('-hls_init_time')).toBe('2');
    expect(at('-hls_list_size')).toBe('0');
    expect(at('-hls_key_info_file')).toBe('/d/key.info');
    expect(at('-hls_segment_filename')).toBe('/d/%06d.ts');
    expect(at('-force_key_frames')).toBe('expr:gte(t,n_forced*4)');
    expect(keyInfoText(p, '/d/key.bin')).toBe('https://k/k\n/d/key.bin\n\n');
  });

  it('is persistent only, like every avthumb', () => {
    status400(() => parsePipeline('avthumb/m3u8/segtime/10'), /persistent command/);
    expect(parsePipeline('avthumb/hls/segtime/10', 'persistent')[0]?.name).toBe('avthumb');
  });
});

describe('key patterns', () => {
  it('replace $(count) or ${count} with the six-digit index; the default sits beside the playlist', () => {
    expect(patternKey(parseKeyPattern('c', 'savePattern', b64('a/$(count).ts')), 7)).toBe('a/000007.ts');
    expect(patternKey(parseKeyPattern('c', 'pattern', b64('b-${count}')), 12)).toBe('b-000012');
    expect(defaultSegmentPattern('videos/x.m3u8')).toBe('videos/x/$(count).ts');
    expect(defaultSegmentPattern('Zm9v/Fhash')).toBe('Zm9v/Fhash/$(count).ts');
    status400(() => parseKeyPattern('c', 'pattern', b64('no-count')), /must contain \$\(count\)/);
    status400(() => parseKeyPattern('c', 'pattern', b64('$(fname)-$(count)')), /only the variable \$\(count\)/);
  });
});

describe('pm3u8', () => {
  const urls: BucketUrls = {
    urlOf: async (b, k) => `http://g.example/${b}/${k}`,
    keyOf: (u) => (u.host === 'g.example' && u.pathname.startsWith('/b/') ? u.pathname.slice(3) : undefined),
    sign: (url, deadline) => `${url}${url.includes('?') ? '&' : '?'}e=${deadline}&token=AK:sig`,
  };
  it('signs every URI of the bucket (relative ones resolved against the playlist), leaves others alone', () => {
    const text = [
      '#EXTM3U',
      '#EXT-X-KEY:METHOD=AES-128,URI="keys/k1.key",IV=0x00',
      '#EXTINF:4.0,',
      'http://g.example/b/v/000000.ts',
      '#EXTINF:4.0,',
      'v/000001.ts',
      '#EXTINF:4.0,',
      'https://cdn.other.example/v/000002.ts',
      '#EXT-X-ENDLIST',
    ].join('\n');
    const out = signPlaylist(text, 'http://g.example/b/play.m3u8', urls, 1000).split('\n');
    expect(out[1]).toBe('#EXT-X-KEY:METHOD=AES-128,URI="http://g.example/b/keys/k1.key?e=1000&token=AK:sig",IV=0x00');
    expect(out[3]).toBe('http://g.example/b/v/000000.ts?e=1000&token=AK:sig');
    expect(out[5]).toBe('http://g.example/b/v/000001.ts?e=1000&token=AK:sig');
    expect(out[7]).toBe('https://cdn.other.example/v/000002.ts');
    expect(out[8]).toBe('#EXT-X-ENDLIST');
  });
  it('parses mode 0 with expires or deadline', () => {
    expect(parsePm3u8(['0'])).toEqual({ expires: 43200 });
    expect(parsePm3u8(['0', 'expires', '600', 'deadline', '2000000000'])).toEqual({ expires: 600, deadline: 2000000000 });
    status400(() => parsePm3u8(['1']), /mode must be 0/);
    status400(() => parsePm3u8(['0', 'query', 'eA']), /unknown parameter "query"/);
  });
});

describe('vsample and avconcat', () => {
  it('vsample: one frame per interval, rotated and scaled, capped one past the frame limit', () => {
    const p = parseVsample(['png', 'ss', '1.5', 't', '10', 's', 'x120', 'rotate', '90', 'interval', '0.5', 'pattern', b64('f/$(count).png')]);
    expect(p).toMatchObject({ format: 'png', ssMs: 1500, tMs: 10_000, h: 120, rotate: 90, intervalMs: 500, pattern: 'f/$(count).png' });
    const args = vsampleArgs(p, '/in', '/d', 1000, 2);
    expect(args[args.indexOf('-vf') + 1]).toBe('fps=fps=1000/500,transpose=clock,scale=-1:120');
    expect(args[args.indexOf('-frames:v') + 1]).toBe('1001');
    expect(args.at(-1)).toBe('file:/d/%06d.png');
    status400(() => parseVsample(['jpg', 'pattern', b64('a/$(count)'), 'savePattern', b64('b/$(count)')]), /one of pattern and savePattern/);
    status400(() => parseVsample(['jpg', 's', '10x10']), /s width must be between 20 and 3840/);
  });

  it('avconcat: resources in order, the source at index, a concat filter over every input', () => {
    const p = parseAvconcat(['2', 'format', 'mp4', 'index', '2', b64('kodo://b/x.mp4'), 'addAudio', '0', b64('http://h/b/y.mp4')]);
    expect(p).toMatchObject({ mode: 2, format: 'mp4', index: 2, addAudio: false, resources: ['kodo://b/x.mp4', 'http://h/b/y.mp4'] });
    const inputs = [
      { path: '/a', duration: 3, video: { w: 319, h: 180, fps: 24 }, audio: false },
      { path: '/b', duration: 4, video: { w: 160, h: 90, fps: 30 }, audio: true },
    ];
    const args = avconcatArgs({ ...p, addAudio: true }, inputs, '/out.mp4', 2);
    const graph = args[args.indexOf('-filter_complex') + 1] as string;
    expect(graph).toContain('[0:v:0]scale=320:180:');
    expect(graph).toContain('anullsrc=r=44100:cl=stereo,atrim=duration=3.000');
    expect(graph).toMatch(/\[v0\]\[a0\]\[v1\]\[a1\]concat=n=2:v=1:a=1\[v\]\[a\]$/);
    // Without addAudio, one input lacking audio leaves the output without audio.
    expect(avconcatArgs(p, inputs, '/out.mp4', 2)[args.indexOf('-filter_complex') + 1]).toMatch(/concat=n=2:v=1:a=0\[v\]$/);
    status400(() => parseAvconcat(['2', 'format', 'mp4', 'index', '3', b64('kodo://b/x')]), /index must be at most 2/);
    status400(() => parseAvconcat(['2', 'format', 'mp4', b64('ftp://x/y')]), /must be kodo:\/\/<bucket>\/<key> or an http\(s\) URL/);
    status400(() => parseAvconcat(['2', b64('kodo://b/x')]), /format is required/);
  });
});
