import { useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, compact, send, unwrap } from '../client';
import { keys } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { GroupOut } from '../types';

function fetchGroupPage(orgId: string, cursor: string | undefined, limit = PAGE_SIZE) {
  return unwrap(
    api.GET('/api/v1/orgs/{org_id}/groups', {
      params: { path: { org_id: orgId }, query: compact({ limit, cursor }) },
    }),
  );
}

export function useGroups(orgId: string | null) {
  return usePaged<GroupOut>(
    keys.orgGroups(orgId ?? ''),
    (cursor) => fetchGroupPage(orgId ?? '', cursor),
    Boolean(orgId),
  );
}

/** First page (up to 200) of groups for each organization, for pickers. */
export function useGroupsOfOrgs(orgIds: string[]) {
  return useQueries({
    queries: orgIds.map((orgId) => ({
      queryKey: [...keys.orgGroups(orgId), 'all'],
      queryFn: () => fetchGroupPage(orgId, undefined, 200),
    })),
    combine: (results) => ({
      groups: results.flatMap((result) => result.data?.items ?? []),
      isPending: results.some((result) => result.isPending),
    }),
  });
}

export function useGroup(groupId: string) {
  return useQuery({
    queryKey: keys.group(groupId),
    queryFn: () => unwrap(api.GET('/api/v1/groups/{group_id}', { params: { path: { group_id: groupId } } })),
  });
}

export function useCreateGroup(orgId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) =>
      unwrap(api.POST('/api/v1/orgs/{org_id}/groups', { params: { path: { org_id: orgId } }, body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.groups }),
  });
}

export function useRenameGroup() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ groupId, name }: { groupId: string; name: string }) =>
      unwrap(api.PATCH('/api/v1/groups/{group_id}', { params: { path: { group_id: groupId } }, body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.groups }),
  });
}

export function useDeleteGroup() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (groupId: string) =>
      send(api.DELETE('/api/v1/groups/{group_id}', { params: { path: { group_id: groupId } } })),
    onSuccess: (_, groupId) => {
      client.removeQueries({ queryKey: keys.group(groupId) });
      return client.invalidateQueries({ queryKey: [...keys.groups, 'by-org'] });
    },
  });
}
