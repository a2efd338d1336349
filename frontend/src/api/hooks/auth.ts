import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { setCsrfToken } from '../csrf';
import { isApiError } from '../errors';
import { queries, scopes } from '../keys';
import { fetchMe } from '../me';
import type { LoginRequest, MeOut, PasswordChangeRequest } from '../types';

export function useLogin() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: LoginRequest): Promise<MeOut> => {
      const login = await unwrap(api.POST('/api/v1/auth/login', { body }));
      setCsrfToken(login.csrf_token);
      try {
        const me = await fetchMe();
        if (me) return me;
      } catch (error) {
        if (!isApiError(error, 403, 'password_change_required')) throw error;
      }
      // Enough to reach the password screen if /me is withheld until the change.
      return {
        user: login.user,
        roles: [],
        memberships: [],
        capabilities: { actions: [], orgs: [], groups: [] },
        csrf_token: login.csrf_token,
        must_change_password: login.must_change_password,
      };
    },
    onSuccess: (me) => {
      client.removeQueries({ predicate: (query) => query.queryKey[0] !== scopes.me[0] });
      client.setQueryData(scopes.me, me);
    },
  });
}

export function useLogout() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => send(api.POST('/api/v1/auth/logout')),
    onSettled: () => {
      // Forget everything locally even if the server call failed.
      setCsrfToken(null);
      client.removeQueries({ predicate: (query) => query.queryKey[0] !== scopes.me[0] });
      client.setQueryData(scopes.me, null);
    },
  });
}

export function useChangePassword() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: PasswordChangeRequest) => unwrap(api.POST('/api/v1/auth/password', { body })),
    onSuccess: (me) => {
      setCsrfToken(me.csrf_token);
      client.setQueryData(scopes.me, me);
    },
  });
}

export const PASSWORD_CHECK_DELAY_MS = 250;

/** The server's strength verdict for a candidate password, debounced while typing. */
export function usePasswordCheck(password: string, context: { email?: string; name?: string } = {}) {
  const [debounced] = useDebouncedValue(password, PASSWORD_CHECK_DELAY_MS);
  // The context only sharpens the verdict: a half-typed or overlong email or name is left out
  // rather than failing the check.
  const email = context.email && context.email.length <= 320 ? context.email : null;
  const name = context.name && context.name.length <= 200 ? context.name : null;
  const query = useQuery(queries.passwordCheck(debounced, email, name));
  return { ...query, settled: debounced === password };
}
