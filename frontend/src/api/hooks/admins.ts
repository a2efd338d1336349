import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { queries, scopes } from '../keys';
import { usePaged, type PagedList } from '../paged';
import type { AdminGrantOut } from '../types';

/** One admin list (org or group) with its grant and revoke actions. */
export interface AdminGrants {
  list: PagedList<AdminGrantOut>;
  grant: ReturnType<typeof useGrantMutation>;
  revoke: ReturnType<typeof useRevokeMutation>;
}

function useGrantMutation(listKey: QueryKey, put: (userId: string) => Promise<AdminGrantOut>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: put,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: listKey });
      void client.invalidateQueries({ queryKey: scopes.me });
    },
  });
}

function useRevokeMutation(listKey: QueryKey, remove: (userId: string) => Promise<void>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: remove,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: listKey });
      void client.invalidateQueries({ queryKey: scopes.me });
    },
  });
}

export function useOrgAdmins(orgId: string): AdminGrants {
  const list = queries.orgAdmins(orgId);
  const key = list.queryKey;
  const path = { org_id: orgId };
  return {
    list: usePaged<AdminGrantOut>(list),
    grant: useGrantMutation(key, (userId) =>
      unwrap(api.PUT('/api/v1/orgs/{org_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
    revoke: useRevokeMutation(key, (userId) =>
      send(api.DELETE('/api/v1/orgs/{org_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
  };
}

export function useGroupAdmins(groupId: string): AdminGrants {
  const list = queries.groupAdmins(groupId);
  const key = list.queryKey;
  const path = { group_id: groupId };
  return {
    list: usePaged<AdminGrantOut>(list),
    grant: useGrantMutation(key, (userId) =>
      unwrap(api.PUT('/api/v1/groups/{group_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
    revoke: useRevokeMutation(key, (userId) =>
      send(api.DELETE('/api/v1/groups/{group_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
  };
}
