import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, compact, unwrap } from '../client';
import { keys } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { UserCreate, UserOut, UserUpdate } from '../types';

export interface UserFilters {
  q?: string;
  org_id?: string;
  group_id?: string;
  limit?: number;
}

export function useUsers(filters: UserFilters = {}, enabled = true) {
  const query = compact({ limit: PAGE_SIZE, ...filters });
  return usePaged<UserOut>(
    [...keys.users, 'list', query],
    (cursor) => unwrap(api.GET('/api/v1/users', { params: { query: compact({ ...query, cursor }) } })),
    enabled,
  );
}

export function useCreateUser() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: UserCreate) => unwrap(api.POST('/api/v1/users', { body })),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: keys.users });
      void client.invalidateQueries({ queryKey: ['members'] });
    },
  });
}

export function useUpdateUser() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ userId, changes }: { userId: string; changes: UserUpdate }) =>
      unwrap(api.PATCH('/api/v1/users/{user_id}', { params: { path: { user_id: userId } }, body: changes })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.users }),
  });
}
