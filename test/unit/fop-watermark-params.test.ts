/** watermark parameters, colours, fonts and mark scaling (docs/development/kodo-protocol.md §10.5). */
import { describe, expect, it } from 'vitest';
import { parsePipeline } from '../../src/fops/registry.js';
import { parseWatermark } from '../../src/fops/watermark-params.js';
import { fontFace, parseColour } from '../../src/fops/watermark-text.js';
import { scaledMarkSize } from '../../src/fops/watermark.js';
import { status400 } from '../helpers/errors.js';

const b64 = (s: string, pad = true): string => {
  const t = Buffer.from(s, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
  return pad ? t : t.replace(/=+$/, '');
};
const URL1 = 'http://example.com/logo.png?x=1';


describe('parseWatermark', () => {
  it('mode 1 with defaults and with every parameter (padded or bare base64)', () => {
    expect(parseWatermark(['1', 'image', b64(URL1)])).toEqual({
      marks: [{ kind: 'image', url: URL1, dissolve: 100, gravity: 'SouthEast', dx: 10, dy: 10, ws: 0, wst: 0 }],
    });
    expect(parseWatermark(['1', 'dissolve', '40', 'image', b64(URL1, false), 'gravity', 'center', 'dx', '-3', 'dy', '0', 'ws', '0.25', 'wst', '2'])).toEqual({
      marks: [{ kind: 'image', url: URL1, dissolve: 40, gravity: 'Center', dx: -3, dy: 0, ws: 0.25, wst: 2 }],
    });
  });

  it('mode 2 with defaults and with every parameter', () => {
    const [m] = parseWatermark(['2', 'text', b64('水印 ok')]).marks;
    expect(m).toMatchObject({ kind: 'text', text: '水印 ok', fontSize: 240, fill: '#000000', dissolve: 100, gravity: 'SouthEast', dx: 10, dy: 10 });
    expect(m && 'font' in m && m.font.name).toBe('DejaVu Sans');
    const [n] = parseWatermark(['2', 'text', b64('a'), 'font', b64('dejavu serif bold'), 'fontsize', '500', 'fill', b64('#0F0'), 'dissolve', '1']).marks;
    expect(n).toMatchObject({ fontSize: 500, fill: '#00ff00', dissolve: 1 });
    expect(n && 'font' in n && n.font.name).toBe('DejaVu Serif Bold');
    expect(parseWatermark(['2', 'text', b64('a'), 'fontsize', '0']).marks[0]).toMatchObject({ fontSize: 240 });
  });

  it('mode 3 splits marks at each image or text', () => {
    const p = parseWatermark(['3', 'image', b64(URL1), 'dx', '1', 'text', b64('t'), 'dx', '2', 'image', b64(URL1), 'gravity', 'North']);
    expect(p.marks.map((m) => [m.kind, m.dx, m.gravity])).toEqual([
      ['image', 1, 'SouthEast'],
      ['text', 2, 'SouthEast'],
      ['image', 10, 'North'],
    ]);
  });

  it.each([
    ['watermark/0', /mode must be/],
    ['watermark/1/image', /image has no value|has no value/],
    ['watermark/1/gravity/North', /mode 1 needs image/],
    [`watermark/1/image/${b64(URL1)}/image/${b64(URL1)}`, /image given twice/],
    [`watermark/1/image/${b64('/relative')}`, /http\(s\) URL/],
    [`watermark/1/image/${b64(URL1)}/fontsize/10`, /unknown parameter "fontsize" for an image watermark/],
    [`watermark/2/text/${b64('a')}/ws/0.5`, /unknown parameter "ws" for a text watermark/],
    [`watermark/2/text/${b64('  ')}`, /text must have/],
    [`watermark/2/text/${b64('a')}/fontsize/20001`, /fontsize must be/],
    [`watermark/2/text/${b64('a')}/dx/10000`, /dx must be/],
    [`watermark/2/text/${b64('a')}/dissolve/101`, /dissolve must be/],
    [`watermark/1/image/${b64(URL1)}/wst/4`, /wst must be/],
    [`watermark/1/image/${b64(URL1)}/ws/-0.5`, /ws must be/],
    ['watermark/3', /mode 3 needs at least one/],
  ])('%s → 400', (q, msg) => status400(() => parsePipeline(q), new RegExp(`watermark: .*${msg.source}`)));
});

describe('colours, fonts, scaling', () => {
  it('colours', () => {
    expect(parseColour('#FF0000')).toBe('#ff0000');
    expect(parseColour('#abc')).toBe('#aabbcc');
    expect(parseColour('Red')).toBe('#ff0000');
    expect(parseColour('gray')).toBe('#808080');
    expect(parseColour('#12345')).toBeUndefined();
    expect(parseColour('rgb(1,2,3)')).toBeUndefined();
  });

  it('fonts by family name, default DejaVu Sans', () => {
    expect(fontFace('DejaVu Sans Mono').name).toBe('DejaVu Sans Mono');
    expect(fontFace('dejavu_sans-mono bold').name).toBe('DejaVu Sans Mono Bold');
    expect(fontFace('serif').name).toBe('DejaVu Serif');
    expect(fontFace('微软雅黑').name).toBe('DejaVu Sans');
    expect(fontFace(undefined).file).toMatch(/dejavu-fonts-ttf[/\\]ttf[/\\]DejaVuSans\.ttf$/);
  });

  it('ws scales the mark by the chosen edges', () => {
    // Qiniu's documented example: base 250×250, mark 91×61, ws=1 → 373×250 (short edges).
    expect(scaledMarkSize({ ws: 1, wst: 0 }, 91, 61, 250, 250)).toEqual({ width: 373, height: 250 });
    expect(scaledMarkSize({ ws: 0, wst: 0 }, 91, 61, 250, 250)).toEqual({ width: 91, height: 61 });
    expect(scaledMarkSize({ ws: 0.5, wst: 1 }, 20, 10, 400, 200)).toEqual({ width: 200, height: 100 });
    expect(scaledMarkSize({ ws: 0.5, wst: 2 }, 20, 10, 400, 200)).toEqual({ width: 200, height: 100 });
    expect(scaledMarkSize({ ws: 0.5, wst: 3 }, 20, 10, 400, 200)).toEqual({ width: 200, height: 100 });
    expect(scaledMarkSize({ ws: 0.1, wst: 3 }, 10, 20, 400, 200)).toEqual({ width: 10, height: 20 });
  });
});
