/**
 * The audio/video fops' pure parts (docs/development/kodo-protocol.md §10.6): vframe and avthumb parameters, bitrates and times,
 * filtergraph escaping (also fed to a real ffmpeg, so hostile text provably stays text), the argv builder, and
 * the subprocess helper (missing programs, exit codes, abort).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import { parsePipeline } from '../../src/fops/registry.js';
import { avthumbArgs, avthumbFilterGraph, escapeFilterValue, overlayPosition, parseAvthumb } from '../../src/fops/video/avthumb-args.js';
import { fontFile } from '../../src/fops/video/avthumb.js';
import { reshapeProbe } from '../../src/fops/video/avinfo.js';
import { parseBitrate, parseSeconds } from '../../src/fops/video/common.js';
import { runTool, stderrSummary } from '../../src/fops/video/spawn.js';
import { parseVframe, vframeArgs } from '../../src/fops/video/vframe.js';
import { status400 } from '../helpers/errors.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');


const files = { input: '/data/blobs/ab/cd/blob', output: '/data/fop-tmp/x/1.mp4', font: '/fonts/DejaVuSans.ttf' };

describe('times and bitrates', () => {
  it('seconds have millisecond precision', () => {
    expect(parseSeconds('c', 'offset', '5')).toBe(5000);
    expect(parseSeconds('c', 'offset', '1.5')).toBe(1500);
    expect(parseSeconds('c', 'offset', '0.0004')).toBe(0);
    expect(parseSeconds('c', 'offset', '1.2346')).toBe(1235);
    for (const v of ['-1', 'abc', '', '1e3', '1.', '.5', '0x10', '9999999']) status400(() => parseSeconds('c', 'offset', v), /c: offset must be/);
    status400(() => parseSeconds('c', 't', '0', true), /c: t must be greater than 0/);
  });

  it('bitrates take k and m (decimal) suffixes', () => {
    expect(parseBitrate('c', 'vb', '1.25m', 1, 1e9)).toBe(1_250_000);
    expect(parseBitrate('c', 'vb', '128k', 1, 1e9)).toBe(128_000);
    expect(parseBitrate('c', 'vb', '128K', 1, 1e9)).toBe(128_000);
    expect(parseBitrate('c', 'vb', '800000', 1, 1e9)).toBe(800_000);
    for (const v of ['1.2g', '-1k', '', 'k', '1,5m', '1.25mb']) status400(() => parseBitrate('c', 'vb', v, 1, 1e9), /c: vb must be a bitrate/);
    status400(() => parseBitrate('c', 'ab', '3m', 1000, 2_000_000), /c: ab must be between 1000 and 2000000 bit\/s, got 3m/);
  });
});

describe('vframe parameters', () => {
  it('parses format, offset, size and rotation', () => {
    expect(parseVframe(['jpg', 'offset', '5'])).toEqual({ format: 'jpg', offsetMs: 5000 });
    expect(parseVframe(['png', 'offset', '1.25', 'w', '320', 'h', '2160', 'rotate', 'auto'])).toEqual({
      format: 'png',
      offsetMs: 1250,
      w: 320,
      h: 2160,
      rotate: 'auto',
    });
    expect(parseVframe(['jpg', 'rotate', '270', 'offset', '0']).rotate).toBe(270);
  });

  it('rotation comes before scaling; no autorotation unless rotate/auto', () => {
    const args = vframeArgs(parseVframe(['jpg', 'offset', '5', 'w', '320', 'rotate', '90']), '/in', '/out.jpg', 2);
    expect(args.slice(args.indexOf('-vf'), args.indexOf('-vf') + 2)).toEqual(['-vf', 'transpose=clock,scale=320:-1']);
    expect(args).toContain('-noautorotate');
    expect(args.slice(args.indexOf('-ss'), args.indexOf('-ss') + 4)).toEqual(['-ss', '5.000', '-i', 'file:/in']);
    expect(args.at(-1)).toBe('file:/out.jpg');
    expect(vframeArgs(parseVframe(['jpg', 'offset', '5', 'rotate', 'auto']), '/in', '/o', 2)).not.toContain('-noautorotate');
    expect(vframeArgs(parseVframe(['png', 'offset', '5']), '/in', '/o', 2)).not.toContain('-vf');
  });

  it('bad parameters are 400s at parse (the registry too)', () => {
    status400(() => parsePipeline('vframe/jpg/offset/1/offset/2'), /vframe: parameter offset given twice/);
    status400(() => parsePipeline('vframe/jpg/offset'), /vframe: parameter offset has no value/);
    status400(() => parsePipeline('vframe/jpg/offset/1/w/3841'), /vframe: w must be between 1 and 3840/);
  });
});

describe('avthumb parameters', () => {
  it('is persistent-only in the registry', () => {
    status400(() => parsePipeline('avthumb/mp4'), /avthumb: runs only as a persistent command/);
    expect(parsePipeline('avthumb/mp4/s/320x180', 'persistent')[0]?.name).toBe('avthumb');
  });

  it('parses every parameter', () => {
    const p = parseAvthumb([
      'mp4', 'vb', '1.25m', 'ab', '128k', 'ar', '44100', 'r', '29.97', 's', '640x360', 'vcodec', 'libx264', 'acodec', 'libfdk_aac',
      'ss', '1.5', 't', '10', 'stripmeta', '1', 'wmImage', b64('https://example.com/logo.png'), 'wmGravity', 'SouthWest',
      'wmText', b64('hello'), 'wmFont', b64('DejaVu Sans Mono'), 'wmFontColor', b64('#FF0000'), 'wmFontSize', '30', 'wmGravityText', 'Center',
    ]);
    expect(p).toMatchObject({
      format: 'mp4', vb: 1_250_000, ab: 128_000, ar: 44100, r: 29.97, size: { w: 640, h: 360 }, vcodec: 'libx264', acodec: 'aac',
      ssMs: 1500, tMs: 10_000, stripmeta: true, wmImage: 'https://example.com/logo.png', wmGravity: 'SouthWest', wmText: 'hello',
      wmFont: 'DejaVu Sans Mono', wmFontColor: '0xFF0000', wmFontSize: 30, wmGravityText: 'Center',
    });
    expect(parseAvthumb(['webm', 'wmFontColor', b64('red')]).wmFontColor).toBe('red');
    expect(parseAvthumb(['gif', 's', '321x']).size).toEqual({ w: 321 });
  });

  it.each([
    [['mkv'], /avthumb: unsupported format "mkv" \(supported: mp4, flv, webm/],
    [[], /avthumb: unsupported format ""/],
    [['mp4', 'bogus', '1'], /avthumb: unknown parameter "bogus"/],
    [['mp4', 'vb', 'fast'], /avthumb: vb must be a bitrate/],
    [['mp4', 'r', '0'], /avthumb: r must be a frame rate/],
    [['mp4', 'ar', '100'], /avthumb: ar must be between 8000 and 192000/],
    [['mp4', 's', '320'], /avthumb: s must be <W>x<H>/],
    [['mp4', 's', '5000x100'], /avthumb: s width must be between 2 and 4096/],
    [['mp4', 's', '321x180'], /avthumb: s: libx264 needs an even width and height/],
    [['mp4', 'vcodec', 'rm -rf'], /avthumb: unsupported vcodec/],
    [['mp4', 'acodec', 'wma'], /avthumb: unsupported acodec/],
    [['mp4', 'an', '1', 'vn', '1'], /avthumb: an\/1 and vn\/1 together leave nothing to encode/],
    [['mp4', 'an', '2'], /avthumb: an must be 0 or 1/],
    [['mp3', 's', '320x180'], /avthumb: s: the output has no video \(format mp3 is audio-only\)/],
    [['mp4', 'vn', '1', 'vb', '1m'], /avthumb: vb: the output has no video \(vn\/1\)/],
    [['gif', 'ab', '128k'], /avthumb: ab: the output has no audio \(format gif has no audio\)/],
    [['mp4', 'vcodec', 'copy', 's', '320x180'], /avthumb: vcodec copy cannot be combined/],
    [['mp4', 'autoscale', '1'], /avthumb: autoscale\/1 needs s/],
    [['mp4', 'wmImage', '!!'], /avthumb: wmImage must be URL-safe base64/],
    [['mp4', 'wmImage', b64('file:///etc/passwd')], /avthumb: wmImage must be the URL-safe base64 of an http\(s\) URL/],
    [['mp4', 'wmGravity', 'Top'], /avthumb: wmGravity must be one of NorthWest/],
    [['mp4', 'wmText', b64('a\u0000b')], /avthumb: wmText must not contain control characters/],
    [['mp4', 'wmFontColor', b64('#12')], /avthumb: wmFontColor must be/],
    [['mp4', 'wmFontColor', b64('red:x=1')], /avthumb: wmFontColor must be/],
    [['mp4', 'wmFontSize', '0'], /avthumb: wmFontSize must be between 1 and 500/],
  ])('%j is a 400', (args, msg) => status400(() => parseAvthumb(args), msg));
});

describe('filtergraph escaping', () => {
  it('quotes for the option parser, then escapes for the graph parser', () => {
    expect(escapeFilterValue('plain text')).toBe("\\'plain text\\'");
    expect(escapeFilterValue("it's")).toBe("\\'it\\'\\\\\\'\\'s\\'");
    expect(escapeFilterValue('a:b,c;d[e]f\\g')).toBe("\\'a:b\\,c\\;d\\[e\\]f\\\\g\\'");
  });

  it('hostile text stays text in a real ffmpeg (and the unescaped form would not)', () => {
    const hostile = "x':fontsize=999[v];[v]nullsink,drawbox=c=red'\\, %{pts} [out]";
    const graph = (text: string): string => `drawtext=fontfile=${escapeFilterValue(fontFile(undefined))}:text=${text}:expansion=none`;
    const ffmpeg = (vf: string) =>
      spawnSync('ffmpeg', ['-hide_banner', '-v', 'error', '-f', 'lavfi', '-i', 'color=c=white:s=64x32:d=0.1', '-vf', vf, '-frames:v', '1', '-f', 'null', '-'], {
        encoding: 'utf8',
      });
    const ok = ffmpeg(graph(escapeFilterValue(hostile)));
    expect(ok.status, ok.stderr).toBe(0);
    expect(ffmpeg(graph(hostile)).status).not.toBe(0);
  });

  it('gravity positions keep a 10 px margin', () => {
    expect(overlayPosition('NorthWest')).toBe('x=10:y=10');
    expect(overlayPosition('SouthEast')).toBe('x=W-w-10:y=H-h-10');
    expect(overlayPosition('Center', 'w', 'h', 'tw', 'th')).toBe('x=(w-tw)/2:y=(h-th)/2');
  });

  it('fonts resolve to DejaVu faces that ship with the project', () => {
    expect(fontFile(undefined)).toMatch(/dejavu-fonts-ttf\/ttf\/DejaVuSans\.ttf$/);
    expect(fontFile('DejaVu Serif Bold')).toMatch(/DejaVuSerif-Bold\.ttf$/);
    expect(fontFile('../../etc/passwd')).toMatch(/DejaVuSans\.ttf$/);
  });
});

describe('avthumb argv', () => {
  const argAfter = (args: string[], flag: string): string | undefined => args[args.indexOf(flag) + 1];

  it('mp4 defaults: libx264 yuv420p, aac, faststart, bounded threads, file: URLs', () => {
    const args = avthumbArgs(parseAvthumb(['mp4']), files, 3);
    expect(argAfter(args, '-c:v')).toBe('libx264');
    expect(argAfter(args, '-pix_fmt')).toBe('yuv420p');
    expect(argAfter(args, '-c:a')).toBe('aac');
    expect(argAfter(args, '-movflags')).toBe('+faststart');
    expect(args.filter((a) => a === '-threads')).toHaveLength(2);
    expect(argAfter(args, '-threads')).toBe('3');
    expect([argAfter(args, '-filter_threads'), argAfter(args, '-filter_complex_threads')]).toEqual(['3', '3']);
    expect(argAfter(args, '-i')).toBe('file:/data/blobs/ab/cd/blob');
    expect(argAfter(args, '-protocol_whitelist')).toBe('file');
    expect(argAfter(args, '-format_whitelist')).not.toMatch(/hls|concat|image2(,|$)/);
    expect(args.slice(-3)).toEqual(['-f', 'mp4', 'file:/data/fop-tmp/x/1.mp4']);
    expect(args).not.toContain('-vf');
  });

  it('ss seeks the input, t bounds the output; bitrates, rate and metadata', () => {
    const args = avthumbArgs(parseAvthumb(['flv', 'ss', '2', 't', '3.5', 'vb', '1.25m', 'ab', '64k', 'ar', '22050', 'r', '25', 'stripmeta', '1']), files, 2);
    expect(args.indexOf('-ss')).toBeLessThan(args.indexOf('-i'));
    expect(argAfter(args, '-ss')).toBe('2.000');
    expect(args.indexOf('-t')).toBeGreaterThan(args.indexOf('-i'));
    expect(argAfter(args, '-t')).toBe('3.500');
    expect([argAfter(args, '-b:v'), argAfter(args, '-b:a'), argAfter(args, '-ar'), argAfter(args, '-r')]).toEqual(['1250000', '64000', '22050', '25']);
    expect(argAfter(args, '-map_metadata')).toBe('-1');
  });

  it('audio-only outputs drop video, gif drops audio', () => {
    const mp3 = avthumbArgs(parseAvthumb(['mp3']), files, 2);
    expect(mp3).toContain('-vn');
    expect(mp3).not.toContain('-c:v');
    expect(argAfter(mp3, '-c:a')).toBe('libmp3lame');
    const gif = avthumbArgs(parseAvthumb(['gif', 's', '160x']), files, 2);
    expect(gif).toContain('-an');
    expect(argAfter(gif, '-vf')).toBe('scale=160:-2');
  });

  it('watermarks: a second input and a filter_complex; text alone is a -vf chain', () => {
    const p = parseAvthumb(['mp4', 's', '320x180', 'wmImage', b64('http://h/wm.png'), 'wmText', b64('hi'), 'autoscale', '1']);
    const args = avthumbArgs(p, { ...files, wmImage: '/tmp/wm.png' }, 2);
    expect(args.filter((a) => a === '-i')).toHaveLength(2);
    expect(argAfter(args, '-map')).toBe('[vout]');
    expect(argAfter(args, '-filter_complex')).toBe(
      '[0:v:0]scale=320:180:force_original_aspect_ratio=decrease,pad=320:180:(ow-iw)/2:(oh-ih)/2[base];' +
        "[base][1:v:0]overlay=x=W-w-10:y=10,drawtext=fontfile=\\'/fonts/DejaVuSans.ttf\\':text=\\'hi\\':expansion=none" +
        ':fontcolor=black:fontsize=24:x=w-tw-10:y=10[vout]',
    );
    const text = avthumbFilterGraph(parseAvthumb(['mp4', 'wmText', b64('hi')]), files);
    expect(text).toMatch(/^drawtext=/);
  });
});

describe('avinfo reshaping', () => {
  it('keeps Kodo fields with Kodo types and never the file name', () => {
    const out = reshapeProbe({
      streams: [
        { index: 0, codec_type: 'video', width: 640, height: 360, r_frame_rate: '30000/1001', duration: 1.5, nb_frames: 45, extradata_size: 42 },
        { index: 1, codec_type: 'audio', sample_rate: '48000', channels: '2', tags: { language: 'eng', bad: { x: 1 } } },
      ],
      format: { filename: 'file:/secret/path', nb_streams: 2, duration: '1.500000', size: 123, tags: { title: 't' } },
    });
    expect(out.streams[0]).toEqual({ index: 0, width: 640, height: 360, codec_type: 'video', r_frame_rate: '30000/1001', codec_time_base: '1001/30000', duration: '1.5', nb_frames: '45', tags: {} });
    expect(out.streams[1]).toEqual({ index: 1, channels: 2, codec_type: 'audio', sample_rate: '48000', codec_time_base: '1/48000', tags: { language: 'eng' } });
    expect(out.format).toEqual({ filename: 'input', nb_streams: 2, duration: '1.500000', size: '123', tags: { title: 't' } });
  });
});

describe('runTool', () => {
  const never = new AbortController().signal;

  it('a missing program is a 415 naming the setting and the Debian package', async () => {
    for (const tools of [{}, { ffprobe: '/nonexistent/ffprobe' }]) {
      const err = await runTool('avinfo', 'ffprobe', ['-version'], { signal: never, tools }).then(() => undefined, (e: unknown) => e);
      expect(isKodoError(err) && err.status).toBe(415);
      expect((err as Error).message).toMatch(/avinfo: ffprobe is not available \(install the Debian package ffmpeg, or set GRANARY_FFPROBE/);
    }
  });

  it('a failing run is a 400 with the end of stderr, paths redacted', async () => {
    const err = await runTool('vframe', 'ffmpeg', ['-v', 'error', '-i', 'file:/no/such/blob', '-f', 'null', '-'], { signal: never, tools: { ffmpeg: 'ffmpeg' } }, {
      redact: { '/no/such/blob': 'input' },
    }).then(() => undefined, (e: unknown) => e);
    expect(isKodoError(err) && err.status).toBe(400);
    expect((err as Error).message).toBe('audio/video processing failed: vframe: input: No such file or directory');
  });

  it('stdout is returned on success', async () => {
    const out = await runTool('t', 'ffprobe', ['-v', 'error', '-of', 'json', '-show_format', '-f', 'lavfi', 'color=s=16x16:d=1'], { signal: never, tools: { ffprobe: 'ffprobe' } });
    expect(JSON.parse(out.toString())).toHaveProperty('format');
  });

  it('abort SIGKILLs the child and rejects with a time-out', async () => {
    const controller = new AbortController();
    const started = runTool('avthumb', 'ffmpeg', ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc', '-f', 'null', '-'], {
      signal: controller.signal,
      tools: { ffmpeg: 'ffmpeg' },
    });
    setTimeout(() => controller.abort(), 200);
    // The promise settles only once the child has exited.
    await expect(started).rejects.toThrow(/avthumb: processing timed out/);
  });

  it('stderrSummary keeps the last lines without pointers', () => {
    expect(stderrSummary('a\n[mov,mp4 @ 0x55d0c0] file:/x/y: bad\n\n', { '/x/y': 'input' })).toBe('a; [mov,mp4] input: bad');
    expect(stderrSummary('')).toBe('no error message');
  });
});
