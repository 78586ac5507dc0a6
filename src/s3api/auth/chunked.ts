/**
 * aws-chunked request bodies (docs/development/kodo-protocol.md §18.4), decoded as they stream, in bounded memory.
 *
 * Signed (`x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`): each chunk is
 * `<hex size>;chunk-signature=<64 hex>\r\n<data>\r\n`, the last one of size 0. A chunk's signature is the hex
 * HMAC-SHA256, under the request's signing key, of `AWS4-HMAC-SHA256-PAYLOAD\n<time>\n<scope>\n<previous
 * signature>\n<hex SHA-256 of ''>\n<hex SHA-256 of the data>`, the previous signature of the first chunk being the
 * request's own (the seed): a chunk cannot be replaced, dropped or reordered. Unsigned
 * (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`): `<hex size>\r\n<data>\r\n`.
 *
 * Trailers (`…-TRAILER` modes) follow the zero-size chunk as `name:value\r\n` lines, then `\r\n`; signed ones end
 * with `x-amz-trailer-signature:<hex>`, the HMAC of `AWS4-HMAC-SHA256-TRAILER\n<time>\n<scope>\n<last chunk's
 * signature>\n<hex SHA-256 of the "name:value\n" lines>`. The `x-amz-checksum-*` trailer is then checked against
 * the content by checksum.ts.
 *
 * Failures fail the stream with an S3Error before it ends (so nothing is committed): SignatureDoesNotMatch (a
 * chunk or trailer signature), IncompleteBody (the body ends early, or its decoded size is not
 * `x-amz-decoded-content-length`), InvalidRequest (malformed framing, a chunk over 16 MiB or a header line over
 * 4 KiB, bytes after the end).
 */
import { createHash, createHmac, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { S3Errors } from '../errors.js';
import { EMPTY_SHA256, sameHex } from './sigv4.js';

/** Largest chunk accepted, bytes (clients send 64 KiB … 8 MiB). */
export const MAX_CHUNK_BYTES = 16 * 1024 * 1024;
/** Longest chunk header or trailer line, bytes. */
const MAX_LINE_BYTES = 4096;
/** Most trailer bytes. */
const MAX_TRAILER_BYTES = 16 * 1024;

/** What signed chunks chain from (sigv4.ts `V4Verified.chain`). */
export interface ChunkChain {
  seedSignature: string;
  signingKey: Buffer;
  amzDate: string;
  scope: string;
}

export interface ChunkedOptions {
  /** Signed chunks (the chain to check them against); undefined for unsigned ones. */
  chain?: ChunkChain;
  /** Whether trailers follow the last chunk (`…-TRAILER` modes). */
  trailers: boolean;
  /** `x-amz-decoded-content-length`, when sent: the decoded size must equal it. */
  decodedLength?: number;
}

type State = 'header' | 'data' | 'data-crlf' | 'trailer' | 'done';

/** The decoding stream: aws-chunked bytes in, content bytes out; `trailers` holds the trailers once it ended. */
export class AwsChunkedDecoder extends Transform {
  /** Trailer name (lower case) → value, filled when the body ended. */
  readonly trailers = new Map<string, string>();
  private state: State = 'header';
  private line = '';
  private remaining = 0;
  private chunkSignature = '';
  private previous: string;
  private hash: Hash | undefined;
  private decoded = 0;
  private trailerBytes = 0;
  private readonly trailerLines: string[] = [];
  private trailerSignature: string | undefined;

  constructor(private readonly opts: ChunkedOptions) {
    super();
    this.previous = opts.chain?.seedSignature ?? '';
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      this.consume(chunk);
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    if (this.state !== 'done') return done(S3Errors.IncompleteBody('The aws-chunked body ended before its last chunk'));
    if (this.opts.decodedLength !== undefined && this.decoded !== this.opts.decodedLength) {
      return done(S3Errors.IncompleteBody(`x-amz-decoded-content-length is ${this.opts.decodedLength} but the chunks hold ${this.decoded} bytes`));
    }
    done();
  }

  private consume(buf: Buffer): void {
    let i = 0;
    while (i < buf.length) {
      switch (this.state) {
        case 'data': {
          const n = Math.min(this.remaining, buf.length - i);
          const slice = buf.subarray(i, i + n);
          this.hash?.update(slice);
          this.push(slice);
          this.remaining -= n;
          this.decoded += n;
          i += n;
          if (this.remaining === 0) {
            this.endChunk();
            this.state = 'data-crlf';
          }
          break;
        }
        case 'data-crlf': {
          // Two bytes `\r\n`, possibly split across buffers: collected in `line`.
          this.line += String.fromCharCode(buf[i]!);
          i++;
          if (this.line.length === 2) {
            if (this.line !== '\r\n') throw S3Errors.InvalidRequest('aws-chunked: a chunk does not end with CRLF');
            this.line = '';
            this.state = 'header';
          }
          break;
        }
        case 'header':
        case 'trailer': {
          const nl = buf.indexOf(0x0a, i);
          const end = nl < 0 ? buf.length : nl + 1;
          this.line += buf.toString('latin1', i, end);
          if (this.state === 'trailer') {
            this.trailerBytes += end - i;
            if (this.trailerBytes > MAX_TRAILER_BYTES) throw S3Errors.InvalidRequest('aws-chunked: the trailers are too long');
          }
          i = end;
          if (this.line.length > MAX_LINE_BYTES) throw S3Errors.InvalidRequest('aws-chunked: a line is too long');
          if (nl < 0) break;
          if (!this.line.endsWith('\r\n')) throw S3Errors.InvalidRequest('aws-chunked: a line does not end with CRLF');
          const text = this.line.slice(0, -2);
          this.line = '';
          if (this.state === 'header') this.header(text);
          else this.trailerLine(text);
          break;
        }
        case 'done':
          throw S3Errors.InvalidRequest('aws-chunked: bytes after the end of the body');
      }
    }
  }

  /** A chunk header line `<hex>[;chunk-signature=<sig>]`. */
  private header(text: string): void {
    const m = /^([0-9a-fA-F]{1,8})(?:;chunk-signature=([0-9a-fA-F]{64}))?(?:;[^\r\n]*)?$/.exec(text);
    if (!m) throw S3Errors.InvalidRequest('aws-chunked: malformed chunk header');
    const size = parseInt(m[1]!, 16);
    if (size > MAX_CHUNK_BYTES) throw S3Errors.InvalidRequest(`aws-chunked: a chunk is larger than ${MAX_CHUNK_BYTES} bytes`);
    if (this.opts.chain) {
      if (m[2] === undefined) throw S3Errors.SignatureDoesNotMatch('aws-chunked: a chunk has no chunk-signature');
      this.chunkSignature = m[2].toLowerCase();
      this.hash = createHash('sha256');
    }
    this.remaining = size;
    if (size === 0) {
      this.endChunk();
      // Trailer lines (or, without trailers, only the empty line) up to the empty line ending the body.
      this.state = 'trailer';
    } else {
      this.state = 'data';
    }
  }

  /** Checks the signature of the chunk just read (signed mode) and moves the chain on. */
  private endChunk(): void {
    const chain = this.opts.chain;
    if (!chain || !this.hash) return;
    const toSign = `AWS4-HMAC-SHA256-PAYLOAD\n${chain.amzDate}\n${chain.scope}\n${this.previous}\n${EMPTY_SHA256}\n${this.hash.digest('hex')}`;
    const expected = createHmac('sha256', chain.signingKey).update(toSign, 'utf8').digest('hex');
    if (!sameHex(this.chunkSignature, expected)) throw S3Errors.SignatureDoesNotMatch('aws-chunked: a chunk signature does not match');
    this.previous = expected;
    this.hash = undefined;
  }

  /** A trailer line, or the empty line ending the body. */
  private trailerLine(text: string): void {
    if (text === '') {
      this.endTrailers();
      this.state = 'done';
      return;
    }
    if (!this.opts.trailers) throw S3Errors.InvalidRequest('aws-chunked: the last chunk is not followed by CRLF');
    const colon = text.indexOf(':');
    if (colon <= 0) throw S3Errors.InvalidRequest('aws-chunked: malformed trailer');
    const name = text.slice(0, colon).trim().toLowerCase();
    const value = text.slice(colon + 1).trim();
    if (name === 'x-amz-trailer-signature') {
      this.trailerSignature = value;
      return;
    }
    this.trailers.set(name, value);
    this.trailerLines.push(`${name}:${value}\n`);
  }

  /** Checks the trailer signature (signed trailer mode). */
  private endTrailers(): void {
    const chain = this.opts.chain;
    if (!chain || !this.opts.trailers) return;
    if (this.trailerLines.length === 0 && this.trailerSignature === undefined) return;
    if (this.trailerSignature === undefined) throw S3Errors.SignatureDoesNotMatch('aws-chunked: the trailers are not signed');
    const hashed = createHash('sha256').update(this.trailerLines.join(''), 'utf8').digest('hex');
    const toSign = `AWS4-HMAC-SHA256-TRAILER\n${chain.amzDate}\n${chain.scope}\n${this.previous}\n${hashed}`;
    const expected = createHmac('sha256', chain.signingKey).update(toSign, 'utf8').digest('hex');
    if (!sameHex(this.trailerSignature, expected)) throw S3Errors.SignatureDoesNotMatch('aws-chunked: the trailer signature does not match');
  }
}
