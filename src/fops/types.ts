/**
 * Shared types of the fop commands (protocol.md §10). A command is pure: (input, parsed params, limits) →
 * an image (bytes + content type) or a JSON document. The registry parses; the route only serves the result.
 */

/** Limits every image command enforces on its input (config GRANARY_FOP_*). */
export interface FopLimits {
  /** Largest width or height of a source image. */
  maxSide: number;
  /** Largest width × height of a source image (also sharp's `limitInputPixels`). */
  maxPixels: number;
  /** Seconds one libvips operation may run before it is abandoned. */
  timeoutSeconds: number;
}

/** What a command produces: an image (or other bytes) or a JSON document (always the last stage). */
export type FopResult = { body: Buffer; contentType: string } | { json: unknown };

/** One command of the registry: its name, its parameter parser and its implementation. */
export interface FopCommand<P = unknown> {
  name: string;
  /** Parses the `/`-separated arguments after the name; throws `Errors.badRequest('<name>: …')`. */
  parse(args: string[]): P;
  run(input: Buffer, params: P, limits: FopLimits): Promise<FopResult>;
}

/** One stage of a parsed pipeline. */
export interface FopStage {
  name: string;
  params: unknown;
}
