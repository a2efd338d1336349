import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { setCsrfToken } from './csrf';
import { ApiError, isApiError } from './errors';
import { scopes } from './keys';
import type { MeOut } from './types';

/**
 * Session-level failures from any request steer the route guard through the
 * cached /me answer: null means signed out, must_change_password forces the
 * password screen.
 */
function routeAuthFailure(client: QueryClient, error: unknown): void {
  if (isApiError(error, 401, 'not_authenticated')) {
    setCsrfToken(null);
    client.setQueryData<MeOut | null>(scopes.me, null);
  } else if (isApiError(error, 403, 'password_change_required')) {
    client.setQueryData<MeOut | null>(scopes.me, (me) => (me ? { ...me, must_change_password: true } : me));
  }
}

function shouldRetry(failureCount: number, error: unknown): boolean {
  // Client errors will not fix themselves; only retry outages briefly.
  const transient = error instanceof ApiError && (error.status === 0 || error.status >= 500);
  return transient && failureCount < 2;
}

export function createQueryClient(options: { retry?: boolean } = {}): QueryClient {
  const client: QueryClient = new QueryClient({
    queryCache: new QueryCache({ onError: (error) => routeAuthFailure(client, error) }),
    mutationCache: new MutationCache({ onError: (error) => routeAuthFailure(client, error) }),
    defaultOptions: {
      queries: {
        retry: options.retry === false ? false : shouldRetry,
        staleTime: 15_000,
      },
      mutations: { retry: false },
    },
  });
  return client;
}
