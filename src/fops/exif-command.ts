/**
 * `exif` (docs/development/kodo-protocol.md §10.4): `{"<Tag>":{"val":"<string as libexif prints it>","type":<TIFF type>}}` of a JPEG;
 * an image without EXIF → 400 (`Errors.noExif`). The reader is exif.ts.
 */
import { Errors } from '../errors.js';
import { readExif } from './exif.js';
import type { FopCommand } from './types.js';

export const exif: FopCommand<Record<string, never>> = {
  name: 'exif',
  parse(args) {
    if (args.length > 0) throw Errors.badRequest('exif: takes no parameters');
    return {};
  },
  async run(source) {
    return { json: readExif(await source.bytes()) };
  },
};
