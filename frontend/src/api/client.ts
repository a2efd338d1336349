import createClient, { type Middleware } from 'openapi-fetch';
import { getCsrfToken } from './csrf';
import { ApiError, toApiError } from './errors';
import type { paths } from './schema';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const csrfMiddleware: Middleware = {
  onRequest({ request }) {
    const token = getCsrfToken();
    if (!SAFE_METHODS.has(request.method) && token) {
      request.headers.set('X-CSRF-Token', token);
    }
    return request;
  },
};

export const api = createClient<paths>({
  // An absolute base keeps Request construction valid outside browsers (tests).
  baseUrl: typeof window === 'undefined' ? 'http://localhost' : window.location.origin,
  credentials: 'same-origin',
  // Resolved per call so tests can replace the global fetch after import.
  fetch: (request) => globalThis.fetch(request),
});
api.use(csrfMiddleware);

type Outcome = { data?: unknown; error?: unknown; response: Response };

async function settle<R extends Outcome>(call: Promise<R>): Promise<R> {
  try {
    const result = await call;
    if (!result.response.ok) throw toApiError(result.response, result.error);
    return result;
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check your connection and try again.');
  }
}

/** Resolves to the response body, or throws ApiError for any non-2xx answer. */
export async function unwrap<R extends Outcome>(call: Promise<R>): Promise<NonNullable<R['data']>> {
  const result = await settle(call);
  return result.data as NonNullable<R['data']>;
}

/** For endpoints that answer 204 No Content. */
export async function send(call: Promise<Outcome>): Promise<void> {
  await settle(call);
}

/** Drops empty filter values so they are not sent as `?q=`. */
export function compact<T extends Record<string, unknown>>(query: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') out[key as keyof T] = value as T[keyof T];
  }
  return out;
}
