/** The fop pipeline parser and imageView2's parameters and geometry (docs/development/kodo-protocol.md §10.1, §10.2). */
import { describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import { imageView2Geometry } from '../../src/fops/image-view2.js';
import { ignoresErrors, parsePipeline } from '../../src/fops/registry.js';
import { Semaphore } from '../../src/fops/semaphore.js';

function rejects(query: string, msg: RegExp): void {
  try {
    parsePipeline(query);
  } catch (err) {
    expect(isKodoError(err) && err.status).toBe(400);
    expect((err as Error).message).toMatch(msg);
    return;
  }
  throw new Error(`${query} was accepted`);
}

describe('parsePipeline', () => {
  it('parses bare commands and parameter lists', () => {
    expect(parsePipeline('imageInfo')).toEqual([{ name: 'imageInfo', params: {} }]);
    expect(parsePipeline('imageView2/1/w/200/h/100/format/jpg/q/80!/interlace/1|imageAve')).toEqual([
      { name: 'imageView2', params: { mode: 1, w: 200, h: 100, format: 'jpeg', quality: 80, forceQuality: true, interlace: true } },
      { name: 'imageAve', params: {} },
    ]);
    expect(parsePipeline('imageView2/2/h/50/')).toEqual([
      { name: 'imageView2', params: { mode: 2, h: 50, quality: 75, forceQuality: false, interlace: false } },
    ]);
  });

  it.each([
    ['nope', /^invalid argument: nope: unknown command/],
    ['imageInfo/x', /imageInfo: takes no parameters/],
    ['imageAve/1', /imageAve: takes no parameters/],
    ['imageView2/9/w/10', /imageView2: mode must be 0\.\.5/],
    ['imageView2/w/10', /imageView2: mode/],
    ['imageView2/1', /imageView2: w or h is required/],
    ['imageView2/1/w/-1', /imageView2: w must be an integer/],
    ['imageView2/1/w/abc', /imageView2: w must be an integer/],
    ['imageView2/1/w/0', /imageView2: w must be between 1 and 9999/],
    ['imageView2/1/w/10000', /imageView2: w must be between 1 and 9999/],
    ['imageView2/1/w/5000/h/5000', /imageView2: w×h must be below/],
    ['imageView2/1/w/5000', /imageView2: w×h must be below/],
    ['imageView2/1/w/10/h', /imageView2: parameter h has no value/],
    ['imageView2/1/w/10/w/20', /given twice/],
    ['imageView2/1/w/10/format/bmp', /unsupported format/],
    ['imageView2/1/w/10/q/101', /q must be 1\.\.100/],
    ['imageView2/1/w/10/interlace/2', /interlace must be 0 or 1/],
    ['imageView2/1/w/10/zoom/2', /unknown parameter/],
    ['imageInfo|', /fop: empty command/],
  ])('%s → 400', (q, msg) => rejects(q, msg));
});

describe('ignore-error', () => {
  it('is removed before the command parses, anywhere in any stage, and marks the stage', () => {
    const stages = parsePipeline('imageView2/1/ignore-error/1/w/200|imageInfo/ignore-error/0');
    expect(stages).toEqual([
      { name: 'imageView2', params: { mode: 1, w: 200, quality: 75, forceQuality: false, interlace: false }, ignoreError: true },
      { name: 'imageInfo', params: {} },
    ]);
    expect(ignoresErrors(stages)).toBe(true);
    expect(ignoresErrors(parsePipeline('imageAve/ignore-error/0'))).toBe(false);
    expect(ignoresErrors(parsePipeline('imageView2/2/w/10/ignore-error/1/'))).toBe(true);
    expect(ignoresErrors(parsePipeline('imageView2/2/w/10'))).toBe(false);
  });

  it.each([
    ['imageInfo/ignore-error/2', /ignore-error must be 0 or 1/],
    ['imageInfo/ignore-error', /ignore-error must be 0 or 1/],
    ['imageView2/9/w/1/ignore-error/1', /mode must be 0\.\.5/],
  ])('%s → 400', (q, msg) => rejects(q, msg));
});

describe('imageView2Geometry', () => {
  it('never enlarges and crops to the requested box', () => {
    expect(imageView2Geometry({ mode: 1, w: 200, h: 100 }, 600, 450)).toEqual({ width: 200, height: 150, crop: { width: 200, height: 100 } });
    expect(imageView2Geometry({ mode: 1, w: 100 }, 600, 450)).toEqual({ width: 133, height: 100, crop: { width: 100, height: 100 } });
    expect(imageView2Geometry({ mode: 2, w: 2000, h: 2000 }, 600, 450)).toEqual({ width: 600, height: 450 });
    expect(imageView2Geometry({ mode: 0, w: 300 }, 450, 600)).toEqual({ width: 225, height: 300 });
    expect(imageView2Geometry({ mode: 5, w: 200, h: 100 }, 450, 600)).toEqual({ width: 150, height: 200, crop: { width: 100, height: 200 } });
  });
});

describe('Semaphore', () => {
  it('runs at most `size` tasks at once', async () => {
    const sem = new Semaphore(2);
    let active = 0;
    let peak = 0;
    const task = async (): Promise<void> => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 5));
      active--;
    };
    await Promise.all(Array.from({ length: 7 }, () => sem.run(task)));
    expect(peak).toBe(2);
    expect(active).toBe(0);
  });
});
