/**
 * The customer-provided key of an S3 request (SSE-C, `x-amz-server-side-encryption-customer-key`), handed from the
 * S3 door (s3api/sse.ts) to the blob layer (store/crypto/encrypting-blob-store.ts) for the duration of one
 * operation, without threading it through every read and upload path: blobs staged inside `withCustomerKey` are
 * encrypted so that they open only with that key too, and blobs read there may be opened with it. The key lives in
 * memory for that call only; it is never stored (docs/reference/encryption.md).
 *
 * `read()` and `stage()` look the key up when they are called (synchronously), so a stream created inside the
 * scope keeps its key even when its bytes flow later.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const scope = new AsyncLocalStorage<{ key: Buffer }>();

/** Runs `fn` with `key` (32 bytes) as the SSE-C key of the blobs it stages and reads. */
export function withCustomerKey<T>(key: Buffer | undefined, fn: () => Promise<T>): Promise<T> {
  return key ? scope.run({ key }, fn) : fn();
}

/**
 * A function running its argument with the current operation's key (or none): for streams that open blobs later,
 * outside the operation's async context (the pieces of a manifest, read one after the other as the answer drains).
 */
export function bindCustomerKey(): <T>(fn: () => T) => T {
  const store = scope.getStore();
  return (fn) => (store ? scope.run(store, fn) : scope.exit(fn));
}

/** The SSE-C key of the current operation, if any. */
export function currentCustomerKey(): Buffer | undefined {
  return scope.getStore()?.key;
}
