import { useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { GroupOut } from '../types';

export function useGroups(orgId: string | null) {
  return usePaged<GroupOut>(queries.orgGroups(orgId ?? ''), Boolean(orgId));
}

/** First page (up to 200) of groups for each organization, for pickers. */
export function useGroupsOfOrgs(orgIds: string[]) {
  return useQueries({
    queries: orgIds.map((orgId) => queries.allOrgGroups(orgId)),
    combine: (results) => ({
      groups: results.flatMap((result) => result.data?.items ?? []),
      isPending: results.some((result) => result.isPending),
    }),
  });
}

export function useGroup(groupId: string) {
  return useQuery(queries.group(groupId));
}

export function useCreateGroup(orgId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) =>
      unwrap(api.POST('/api/v1/orgs/{org_id}/groups', { params: { path: { org_id: orgId } }, body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.groups }),
  });
}

export function useRenameGroup() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ groupId, name }: { groupId: string; name: string }) =>
      unwrap(api.PATCH('/api/v1/groups/{group_id}', { params: { path: { group_id: groupId } }, body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.groups }),
  });
}

export function useDeleteGroup() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (groupId: string) =>
      send(api.DELETE('/api/v1/groups/{group_id}', { params: { path: { group_id: groupId } } })),
    onSuccess: (_, groupId) => {
      client.removeQueries({ queryKey: queries.group(groupId).queryKey });
      return client.invalidateQueries({ queryKey: scopes.groupLists });
    },
  });
}
