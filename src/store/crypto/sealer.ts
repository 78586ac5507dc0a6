/** The Sealer (ports/sealer.ts) of a master key: envelope.ts's format, for files kept beside the blobs. */
import type { Sealer } from '../../ports/sealer.js';
import { DecryptStream, EncryptStream, hasMagic, HEADER_BYTES, type MasterKey, openBuffer, openHeader, plainSize, sealBuffer, sealedSize } from './envelope.js';

/** A Sealer sealing with `master` (and opening only what it sealed). */
export function masterSealer(master: MasterKey): Sealer {
  return {
    keyId: master.id.toString('hex'),
    headerBytes: HEADER_BYTES,
    sealBuffer: (plain) => sealBuffer(master, plain),
    sealStream: () => new EncryptStream(master),
    openBuffer: (stored) => openBuffer([master], stored),
    openStream: (header) => {
      if (!hasMagic(header)) throw new Error('not a sealed file');
      const { dataKey, nonce } = openHeader(header, [master]);
      return new DecryptStream(dataKey, nonce, { firstChunk: 0, skip: 0, limit: Number.MAX_SAFE_INTEGER, toEnd: true });
    },
    sealedSize,
    plainSize,
  };
}
