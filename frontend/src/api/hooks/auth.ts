import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { setCsrfToken } from '../csrf';
import { isApiError } from '../errors';
import { keys, ME_KEY } from '../keys';
import type { LoginRequest, MeOut, PasswordChangeRequest } from '../types';
import { fetchMe } from './me';

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
        csrf_token: login.csrf_token,
        must_change_password: login.must_change_password,
      };
    },
    onSuccess: (me) => {
      client.removeQueries({ predicate: (query) => query.queryKey[0] !== ME_KEY[0] });
      client.setQueryData(ME_KEY, me);
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
      client.removeQueries({ predicate: (query) => query.queryKey[0] !== ME_KEY[0] });
      client.setQueryData(ME_KEY, null);
    },
  });
}

export function useChangePassword() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: PasswordChangeRequest) => unwrap(api.POST('/api/v1/auth/password', { body })),
    onSuccess: (me) => {
      setCsrfToken(me.csrf_token);
      client.setQueryData(ME_KEY, me);
    },
  });
}

export const PASSWORD_CHECK_DELAY_MS = 250;

/** The server's strength verdict for a candidate password, debounced while typing. */
export function usePasswordCheck(password: string, context: { email?: string; name?: string } = {}) {
  const [debounced] = useDebouncedValue(password, PASSWORD_CHECK_DELAY_MS);
  const email = context.email || null;
  const name = context.name || null;
  const query = useQuery({
    queryKey: [...keys.passwordCheck, debounced, email, name],
    queryFn: () =>
      unwrap(api.POST('/api/v1/auth/password-check', { body: { password: debounced, email, name } })),
    enabled: debounced.length > 0,
    staleTime: Infinity,
    gcTime: 30_000,
  });
  return { ...query, settled: debounced === password };
}
