import { ApiError } from './errors';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/**
 * A fresh random key for one user action. `crypto.randomUUID` exists only in
 * secure contexts (HTTPS or localhost), so plain-HTTP deployments fall back to
 * a version 4 UUID built from `getRandomValues`, which is available everywhere.
 */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A request body sent together with the key that identifies the user's action. */
export interface Idempotent<T> {
  body: T;
  idempotencyKey: string;
}

export function idempotencyHeaders(key: string): Record<string, string> {
  return { [IDEMPOTENCY_HEADER]: key };
}

/**
 * Retrying is safe only because the same key goes with every attempt: the
 * server applies the action once. Retry when the answer may not have arrived
 * (network, 5xx) or the first attempt is still being processed.
 */
export function retryIdempotent(failureCount: number, error: unknown): boolean {
  return error instanceof ApiError && failureCount < 2 && outcomeUnknown(error);
}

/**
 * Whether the server may have applied the action despite the error. Then the
 * next attempt must carry the same key; after a clear refusal nothing was
 * applied, and a new attempt is a new action with a new key.
 */
export function outcomeUnknown(error: unknown): boolean {
  if (!(error instanceof ApiError)) return true;
  return error.status === 0 || error.status >= 500 || (error.status === 409 && error.code === 'idempotency_in_flight');
}
