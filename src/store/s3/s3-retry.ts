/**
 * The retry strategy of Granary's S3 clients (s3-clients.ts): the SDK's standard one (up to 3 attempts, for
 * network resets, throttling and 5xx answers, with a doubling pause) except that a call that timed out is never
 * tried again. The SDK retries a timeout by default, so a frozen store held a request for every attempt's full
 * timeout plus the pauses; here the bound of one attempt (GRANARY_S3_TIMEOUT) is the bound of the call. A retry
 * after a reset keeps its use: a kept-alive connection the server closed just as it was reused.
 */
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { isS3Timeout } from './s3-errors.js';

/** The SDK's token-based retry strategy interface (RetryStrategyV2 of @smithy/types), as the S3 client takes it. */
type RetryStrategyV2 = Extract<NonNullable<S3ClientConfig['retryStrategy']>, { acquireInitialRetryToken: unknown }>;
type RetryToken = Awaited<ReturnType<RetryStrategyV2['acquireInitialRetryToken']>>;
type RetryErrorInfo = Parameters<RetryStrategyV2['refreshRetryTokenForRetry']>[1];

/** Attempts of one call, the first included. */
export const S3_MAX_ATTEMPTS = 3;
/** Pause before the first retry, ms; doubled for each further one (with up to 50% random added). */
const BASE_DELAY_MS = 100;

function token(retries: number, delayMs: number): RetryToken {
  return { getRetryCount: () => retries, getRetryDelay: () => delayMs };
}

/** Whether a failed attempt is worth another: not a timeout, not the caller's own abort, not a 4xx refusal. */
function retryable(info: RetryErrorInfo): boolean {
  const name = (info.error as { name?: unknown } | undefined)?.name;
  if (isS3Timeout(info.error) || name === 'AbortError') return false;
  return info.errorType !== 'CLIENT_ERROR';
}

/** A RetryStrategyV2: see the module comment. The retry middleware sleeps the token's delay (and heeds aborts). */
export function s3RetryStrategy(): RetryStrategyV2 {
  return {
    acquireInitialRetryToken: () => Promise.resolve(token(0, 0)),
    refreshRetryTokenForRetry: (previous, info) => {
      const retries = previous.getRetryCount() + 1;
      if (retries >= S3_MAX_ATTEMPTS || !retryable(info)) return Promise.reject(new Error('no retry for this S3 error'));
      const base = BASE_DELAY_MS * 2 ** (retries - 1);
      return Promise.resolve(token(retries, Math.round(base * (1 + Math.random() / 2))));
    },
    recordSuccess: () => undefined,
  };
}
