import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { MembershipOut, MembershipPut } from '../types';

export function useMembers(groupId: string) {
  return usePaged<MembershipOut>(queries.members(groupId));
}

function useMembershipChanged(groupId: string) {
  const client = useQueryClient();
  return () => {
    void client.invalidateQueries({ queryKey: queries.members(groupId).queryKey });
    void client.invalidateQueries({ queryKey: scopes.me });
  };
}

export function usePutMember(groupId: string) {
  const changed = useMembershipChanged(groupId);
  return useMutation({
    mutationFn: ({ userId, body }: { userId: string; body: MembershipPut }) =>
      unwrap(
        api.PUT('/api/v1/groups/{group_id}/members/{user_id}', {
          params: { path: { group_id: groupId, user_id: userId } },
          body,
        }),
      ),
    onSuccess: changed,
  });
}

export function useRemoveMember(groupId: string) {
  const changed = useMembershipChanged(groupId);
  return useMutation({
    mutationFn: (userId: string) =>
      send(
        api.DELETE('/api/v1/groups/{group_id}/members/{user_id}', {
          params: { path: { group_id: groupId, user_id: userId } },
        }),
      ),
    onSuccess: changed,
  });
}
