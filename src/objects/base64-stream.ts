/**
 * A streaming base64 decoder for `putb64` bodies (Kodo's base64 upload): standard (`+/`) and URL-safe (`-_`)
 * alphabets, `=` padding only at the end, whitespace (CR, LF, space, tab) ignored. Memory: at most 3 pending
 * characters between chunks. Any other character, or data after padding, fails the stream with 400
 * `badBase64`; a length that is not a whole number of base64 quanta (1 character left over) likewise.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { Errors } from '../errors.js';

/** Byte → 1 for characters of either base64 alphabet, 2 for whitespace, 3 for `=`, 0 otherwise. */
const CLASS = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_') CLASS[c.charCodeAt(0)] = 1;
for (const c of ' \t\r\n') CLASS[c.charCodeAt(0)] = 2;
CLASS['='.charCodeAt(0)] = 3;

/** Decodes base64 text flowing through it into bytes; see the module comment. */
export class Base64DecodeStream extends Transform {
  private pending = '';
  private padded = false;

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    let text = '';
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i] as number;
      const cls = CLASS[b];
      if (cls === 2) continue;
      if (cls === 0 || (this.padded && cls !== 3)) {
        cb(Errors.badBase64(`unexpected byte 0x${b.toString(16).padStart(2, '0')} in the base64 body`));
        return;
      }
      if (cls === 3) {
        this.padded = true;
        continue;
      }
      text += String.fromCharCode(b);
    }
    const all = this.pending + text;
    const whole = all.length - (all.length % 4);
    this.pending = all.slice(whole);
    cb(null, whole > 0 ? Buffer.from(all.slice(0, whole), 'base64') : undefined);
  }

  override _flush(cb: TransformCallback): void {
    if (this.pending.length === 1) {
      cb(Errors.badBase64('the base64 body ends in the middle of a byte'));
      return;
    }
    cb(null, this.pending.length > 0 ? Buffer.from(this.pending, 'base64') : undefined);
  }
}
