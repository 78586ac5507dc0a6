/**
 * Full-object CRCs of multipart uploads (AWS S3 User Guide "Checking object integrity", full object checksums):
 * the CRC of the whole content from the parts' CRCs and sizes, without reading the bytes again —
 * `combine(crc(A), crc(B), len(B)) === crc(A ‖ B)` — for the reflected CRCs S3 offers: CRC-32 (objects/
 * crc32-combine.ts, zlib's algorithm), CRC-32C and CRC-64/NVME (the same algorithm on BigInt words of the width).
 * A combine costs a few thousand word operations per part.
 */
import { crc32Combine } from '../objects/crc32-combine.js';

/** A reflected CRC: its width in bits and its polynomial, reflected. */
interface ReflectedCrc {
  bits: bigint;
  poly: bigint;
}

const CRC32C: ReflectedCrc = { bits: 32n, poly: 0x82f63b78n };
const CRC64NVME: ReflectedCrc = { bits: 64n, poly: 0x9a6c9329ac4bc9b5n };

/** a(x) · b(x) modulo p(x), reflected polynomials of `c.bits` bits (the top bit is x^0). */
function multModP(c: ReflectedCrc, a: bigint, b: bigint): bigint {
  let m = 1n << (c.bits - 1n);
  let p = 0n;
  while (m > 0n) {
    if (a & m) p ^= b;
    m >>= 1n;
    b = b & 1n ? (b >> 1n) ^ c.poly : b >> 1n;
  }
  return p;
}

/** x^(8 · bytes) modulo p(x). */
function xPow8n(c: ReflectedCrc, bytes: number): bigint {
  let p = 1n << (c.bits - 1n); // x^0
  let sq = 1n << (c.bits - 2n); // x^1
  // x^(2^3) first: 8 bits per byte.
  for (let k = 0; k < 3; k++) sq = multModP(c, sq, sq);
  for (let n = bytes; n > 0; n = Math.floor(n / 2)) {
    if (n % 2 === 1) p = multModP(c, sq, p);
    sq = multModP(c, sq, sq);
  }
  return p;
}

/** The CRC (big-endian bytes, as S3 writes it) of A ‖ B from those of A and B and B's length in bytes. */
export function combineCrc(algorithm: 'crc32' | 'crc32c' | 'crc64nvme', crcA: Buffer, crcB: Buffer, lenB: number): Buffer {
  if (algorithm === 'crc32') {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(crc32Combine(crcA.readUInt32BE(0), crcB.readUInt32BE(0), lenB));
    return out;
  }
  const c = algorithm === 'crc32c' ? CRC32C : CRC64NVME;
  const v = multModP(c, xPow8n(c, lenB), toBig(crcA)) ^ toBig(crcB);
  const out = Buffer.alloc(Number(c.bits / 8n));
  if (c.bits === 64n) out.writeBigUInt64BE(v);
  else out.writeUInt32BE(Number(v));
  return out;
}

const toBig = (b: Buffer): bigint => (b.length === 8 ? b.readBigUInt64BE(0) : BigInt(b.readUInt32BE(0)));
