/**
 * `qhash/<algorithm>` (docs/development/kodo-protocol.md §10.9): the hex digest of the whole source and its
 * size, `{"hash": "<lower-case hex>", "fsize": <bytes>}` — on download URLs and as a persistent command.
 * Kodo documents md5, sha1 and sha256; Granary also accepts sha224, sha384 and sha512. The source is read as
 * a stream (no size limit beyond the run's time limit); other algorithms are a 400.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Errors } from '../../errors.js';
import type { FopCommand } from '../types.js';

/** The algorithms qhash accepts (Kodo's three first), as node:crypto names them. */
export const QHASH_ALGORITHMS = ['md5', 'sha1', 'sha256', 'sha224', 'sha384', 'sha512'] as const;
export type QhashAlgorithm = (typeof QHASH_ALGORITHMS)[number];

export const qhash: FopCommand<{ algorithm: QhashAlgorithm }> = {
  name: 'qhash',
  parse(args) {
    const [algorithm, ...rest] = args;
    if (!QHASH_ALGORITHMS.includes(algorithm as QhashAlgorithm)) {
      throw Errors.badRequest(`qhash: algorithm must be one of ${QHASH_ALGORITHMS.join(', ')}, got ${JSON.stringify(algorithm ?? '')}`);
    }
    if (rest.length > 0) throw Errors.badRequest('qhash: takes only the algorithm');
    return { algorithm: algorithm as QhashAlgorithm };
  },
  async run(source, { algorithm }, ctx) {
    const hash = createHash(algorithm);
    let fsize = 0;
    const path = await source.file();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        fsize += chunk.length;
        done();
      },
    });
    await pipeline(createReadStream(path), sink, { signal: ctx.signal }).catch((err: unknown) => {
      if (ctx.signal.aborted) throw Errors.fopFailed('qhash: processing timed out');
      throw err;
    });
    return { json: { hash: hash.digest('hex'), fsize } };
  },
};
