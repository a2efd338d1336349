import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import type { UserFilters } from '../filters';
import { queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { UserCreate, UserOut, UserUpdate } from '../types';

export type { UserFilters } from '../filters';

export function useUsers(filters: UserFilters = {}, enabled = true) {
  return usePaged<UserOut>(queries.users(filters), enabled);
}

export function useCreateUser() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: UserCreate) => unwrap(api.POST('/api/v1/users', { body })),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: scopes.users });
      void client.invalidateQueries({ queryKey: scopes.members });
    },
  });
}

export function useUpdateUser() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ userId, changes }: { userId: string; changes: UserUpdate }) =>
      unwrap(api.PATCH('/api/v1/users/{user_id}', { params: { path: { user_id: userId } }, body: changes })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.users }),
  });
}

/** A new initial password: the user is signed out everywhere and must change it at next sign-in. */
export function useResetPassword() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ userId, initialPassword }: { userId: string; initialPassword: string }) =>
      unwrap(
        api.POST('/api/v1/users/{user_id}/password-reset', {
          params: { path: { user_id: userId } },
          body: { initial_password: initialPassword },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.users }),
  });
}

/** Grant or revoke super admin (super admin only). */
export function useSetSuperAdmin() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ userId, grant }: { userId: string; grant: boolean }) => {
      const params = { params: { path: { user_id: userId } } };
      return send(
        grant
          ? api.PUT('/api/v1/users/{user_id}/super-admin', params)
          : api.DELETE('/api/v1/users/{user_id}/super-admin', params),
      );
    },
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: scopes.users });
      void client.invalidateQueries({ queryKey: scopes.me });
    },
  });
}
