/** Assertions on errors thrown by pure parts (parsers): a Kodo catalogue error with a given status and message. */
import { expect } from 'vitest';
import { isKodoError } from '../../src/errors.js';

/** `fn` throws a Kodo error of HTTP status 400 whose message matches `msg`. */
export function status400(fn: () => unknown, msg: RegExp): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(isKodoError(err) && err.status, String(err)).toBe(400);
  expect((err as Error).message).toMatch(msg);
}
