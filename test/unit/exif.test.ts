import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import { cfixed, readExif } from '../../src/fops/exif.js';
import { EXIF_TAGS, GPS_TAGS, IFD0_TAGS, INTEROP_TAGS } from '../../src/fops/exif-tags.js';

const DIR = '/work/shared/fixtures/images';
const load = (f: string): Buffer => readFileSync(join(DIR, f));

/** libexif's strings for one file, keyed by libexif tag name: `exif -m -i --no-fixup --ifd=<IFD>` per IFD. */
function golden(file: string): Map<string, string> {
  const out = new Map<string, string>();
  const ifds: Array<[string, ReadonlyMap<number, string>]> = [
    ['0', IFD0_TAGS], ['EXIF', EXIF_TAGS], ['GPS', GPS_TAGS], ['Interoperability', INTEROP_TAGS],
  ];
  for (const [ifd, table] of ifds) {
    let text: string;
    try {
      text = execFileSync('/usr/bin/exif', ['-m', '-i', '--no-fixup', `--ifd=${ifd}`, join(DIR, file)], {
        encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
      });
    } catch {
      continue; // the IFD is absent
    }
    for (const line of text.split('\n')) {
      const tab = line.indexOf('\t');
      if (!line.startsWith('0x') || tab < 0) continue;
      const name = table.get(Number.parseInt(line.slice(2, tab), 16));
      if (name !== undefined && !out.has(name)) out.set(name, line.slice(tab + 1));
    }
  }
  return out;
}

const COMMON = [
  'Make', 'Model', 'Orientation', 'XResolution', 'YResolution', 'ResolutionUnit', 'Software', 'DateTime',
  'YCbCrPositioning', 'ExposureTime', 'FNumber', 'ExposureProgram', 'ISOSpeedRatings', 'ExifVersion',
  'DateTimeOriginal', 'DateTimeDigitized', 'ComponentsConfiguration', 'ShutterSpeedValue', 'ApertureValue',
  'ExposureBiasValue', 'MaxApertureValue', 'MeteringMode', 'LightSource', 'Flash', 'FocalLength', 'UserComment',
  'FlashPixVersion', 'ColorSpace', 'PixelXDimension', 'PixelYDimension', 'FocalPlaneXResolution',
  'FocalPlaneResolutionUnit', 'CustomRendered', 'ExposureMode', 'WhiteBalance', 'SceneCaptureType',
  'GPSVersionID', 'GPSLatitudeRef', 'GPSLatitude', 'GPSLongitude', 'GPSAltitudeRef', 'GPSTimeStamp',
  'GPSMapDatum', 'GPSDateStamp', 'InteroperabilityIndex', 'InteroperabilityVersion',
];

function expectNoExif(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    expect(isKodoError(err) && err.kind === 'noExif' && err.status === 400).toBe(true);
    return;
  }
  throw new Error('expected Errors.noExif');
}

describe('readExif against libexif (exif -m)', () => {
  for (const file of ['Canon_40D.jpg', 'Nikon_D70.jpg', 'gps_DSCN0010.jpg', 'tests_87_OSError.jpg', 'xmp_no_exif.jpg']) {
    it(`matches libexif's strings for ${file}`, () => {
      const ours = readExif(load(file));
      const gold = golden(file);
      expect(gold.size).toBeGreaterThan(5);
      const mismatches: string[] = [];
      let both = 0;
      for (const [name, val] of gold) {
        const mine = ours[name];
        if (mine === undefined) continue;
        both++;
        if (mine.val !== val) mismatches.push(`${name}: ours ${JSON.stringify(mine.val)} libexif ${JSON.stringify(val)}`);
      }
      const missing = [...gold.keys()].filter((n) => !(n in ours));
      console.log(`${file}: ${both - mismatches.length}/${gold.size} libexif tags match`
        + (missing.length ? `; missing ${missing.join(',')}` : '') + (mismatches.length ? `; ${mismatches.join('; ')}` : ''));
      for (const name of COMMON) {
        if (gold.has(name)) expect(ours[name]?.val, name).toBe(gold.get(name));
      }
      expect(both - mismatches.length).toBeGreaterThanOrEqual(Math.ceil(gold.size * 0.95));
    });
  }

  it('reports the TIFF type number of each entry', () => {
    const canon = readExif(load('Canon_40D.jpg'));
    expect(canon.Make).toEqual({ val: 'Canon', type: 2 });
    expect(canon.XResolution).toEqual({ val: '72', type: 5 });
    expect(canon.ExposureBiasValue).toEqual({ val: '0.00 EV', type: 10 });
    expect(canon.ISOSpeedRatings).toEqual({ val: '100', type: 3 });
    expect(canon.ExifVersion).toEqual({ val: 'Exif Version 2.21', type: 7 });
    expect(canon.Orientation?.type).toBe(3);
    expect(canon.PixelXDimension?.type).toBeGreaterThanOrEqual(3);
    expect(canon.GPSVersionID).toEqual({ val: '2.2.0.0', type: 1 });
    expect(canon.InteroperabilityVersion).toEqual({ val: '0100', type: 7 });
    const gps = readExif(load('gps_DSCN0010.jpg'));
    expect(gps.GPSLatitude).toEqual({ val: '43, 28, 2.81400000', type: 5 });
    expect(gps.GPSLatitudeRef).toEqual({ val: 'N', type: 2 });
  });

  it('does not report IFD pointers or the thumbnail IFD', () => {
    const canon = readExif(load('Canon_40D.jpg'));
    expect(canon.ExifIfdPointer).toBeUndefined();
    expect(canon.Compression).toBeUndefined(); // only in IFD1 here
  });
});

describe('readExif on broken or EXIF-less input', () => {
  it('answers noExif for files whose only APP1 is XMP', () => {
    for (const f of ['invalid_image00971.jpg', 'invalid_image01088.jpg']) {
      const t0 = performance.now();
      expectNoExif(() => readExif(load(f)));
      expect(performance.now() - t0).toBeLessThan(100);
    }
  });

  it('answers noExif for non-JPEG and empty input', () => {
    expectNoExif(() => readExif(Buffer.alloc(0)));
    expectNoExif(() => readExif(Buffer.from('not a jpeg at all')));
    expectNoExif(() => readExif(Buffer.from([0xff, 0xd8, 0xff, 0xe1, 0x00, 0x08, 0x45, 0x78, 0x69, 0x66, 0, 0])));
  });

  it('never throws anything but noExif on truncated or corrupted copies, and stays fast', () => {
    const src = load('Canon_40D.jpg');
    let seed = 12345;
    const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
    const t0 = performance.now();
    for (let k = 0; k < 300; k++) {
      const b = Buffer.from(src.subarray(0, k < 100 ? rnd(12000) : src.length));
      if (k >= 100) for (let j = 0; j < 20; j++) b[12 + rnd(3000)] = rnd(256);
      try {
        const r = readExif(b);
        for (const v of Object.values(r)) expect(typeof v.val).toBe('string');
      } catch (err) {
        expect(isKodoError(err) && err.kind === 'noExif').toBe(true);
      }
    }
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it('survives IFD loops and huge counts', () => {
    // Big-endian TIFF: IFD0 at 8 with one Exif pointer back to itself and one LONG entry with a huge count.
    const tiff = Buffer.alloc(8 + 2 + 12 * 3 + 4);
    tiff.write('MM', 0, 'latin1'); tiff.writeUInt16BE(42, 2); tiff.writeUInt32BE(8, 4);
    tiff.writeUInt16BE(3, 8);
    let p = 10;
    tiff.writeUInt16BE(0x8769, p); tiff.writeUInt16BE(4, p + 2); tiff.writeUInt32BE(1, p + 4); tiff.writeUInt32BE(8, p + 8);
    p += 12;
    tiff.writeUInt16BE(0x0100, p); tiff.writeUInt16BE(4, p + 2); tiff.writeUInt32BE(0xffffffff, p + 4); tiff.writeUInt32BE(8, p + 8);
    p += 12;
    tiff.writeUInt16BE(0x0112, p); tiff.writeUInt16BE(3, p + 2); tiff.writeUInt32BE(1, p + 4); tiff.writeUInt16BE(6, p + 8);
    const app1 = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
    const len = Buffer.alloc(2); len.writeUInt16BE(app1.length + 2);
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe1]), len, app1, Buffer.from([0xff, 0xd9])]);
    expect(readExif(jpeg)).toEqual({ Orientation: { val: 'Right-top', type: 3 } });
  });
});

describe('cfixed (C printf %.Nf)', () => {
  it('rounds exact ties to even like glibc, otherwise to nearest', () => {
    expect(cfixed(0.125, 2)).toBe('0.12');
    expect(cfixed(0.375, 2)).toBe('0.38');
    expect(cfixed(7.375, 2)).toBe('7.38');
    expect(cfixed(2.5, 0)).toBe('2');
    expect(cfixed(0.1, 1)).toBe('0.1');
    expect(cfixed(-1, 2)).toBe('-1.00');
    expect(cfixed(1e21, 0)).toBe('1000000000000000000000');
  });
});
