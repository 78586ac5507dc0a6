/**
 * Key patterns of multi-object commands (docs/development/kodo-protocol.md §10.6): `savePattern` (also `pattern`)
 * of HLS segments and vsample frames, the URL-safe base64 of a key template holding `$(count)` (or `${count}`),
 * replaced by the object's six-digit index (`000000`, `000001`, …). Other `$(…)` variables are refused (400).
 */
import { urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors } from '../../errors.js';

const COUNT = /\$\(count\)|\$\{count\}/g;

/** The decoded pattern; 400 `<cmd>: <name> …` when not base64, without `$(count)`, or with another variable. */
export function parseKeyPattern(cmd: string, name: string, v: string): string {
  let text: string;
  try {
    text = urlsafeB64DecodeText(v);
  } catch {
    throw Errors.badRequest(`${cmd}: ${name} must be URL-safe base64 of a key pattern`);
  }
  if (!COUNT.test(text)) throw Errors.badRequest(`${cmd}: ${name} must contain $(count), got ${JSON.stringify(text)}`);
  const other = /\$[({][^)}]*[)}]/.exec(text.replace(COUNT, ''));
  if (other) throw Errors.badRequest(`${cmd}: ${name}: only the variable $(count) is supported, got ${other[0]}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(text) || text.length > 750) throw Errors.badRequest(`${cmd}: ${name} must be at most 750 characters, without control characters`);
  return text;
}

/** The key of object `n` (0-based) under `pattern`. */
export function patternKey(pattern: string, n: number): string {
  return pattern.replace(COUNT, String(n).padStart(6, '0'));
}
