import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { api, compact, send, unwrap } from '../client';
import { keys, ME_KEY } from '../keys';
import { PAGE_SIZE, usePaged, type PagedList } from '../paged';
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
      void client.invalidateQueries({ queryKey: ME_KEY });
    },
  });
}

function useRevokeMutation(listKey: QueryKey, remove: (userId: string) => Promise<void>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: remove,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: listKey });
      void client.invalidateQueries({ queryKey: ME_KEY });
    },
  });
}

export function useOrgAdmins(orgId: string): AdminGrants {
  const key = keys.orgAdmins(orgId);
  const path = { org_id: orgId };
  return {
    list: usePaged<AdminGrantOut>(key, (cursor) =>
      unwrap(api.GET('/api/v1/orgs/{org_id}/admins', { params: { path, query: compact({ limit: PAGE_SIZE, cursor }) } })),
    ),
    grant: useGrantMutation(key, (userId) =>
      unwrap(api.PUT('/api/v1/orgs/{org_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
    revoke: useRevokeMutation(key, (userId) =>
      send(api.DELETE('/api/v1/orgs/{org_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
  };
}

export function useGroupAdmins(groupId: string): AdminGrants {
  const key = keys.groupAdmins(groupId);
  const path = { group_id: groupId };
  return {
    list: usePaged<AdminGrantOut>(key, (cursor) =>
      unwrap(
        api.GET('/api/v1/groups/{group_id}/admins', { params: { path, query: compact({ limit: PAGE_SIZE, cursor }) } }),
      ),
    ),
    grant: useGrantMutation(key, (userId) =>
      unwrap(api.PUT('/api/v1/groups/{group_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
    revoke: useRevokeMutation(key, (userId) =>
      send(api.DELETE('/api/v1/groups/{group_id}/admins/{user_id}', { params: { path: { ...path, user_id: userId } } })),
    ),
  };
}
