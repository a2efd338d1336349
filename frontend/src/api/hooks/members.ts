import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, compact, send, unwrap } from '../client';
import { keys, ME_KEY } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { MembershipOut, MembershipPut } from '../types';

export function useMembers(groupId: string) {
  return usePaged<MembershipOut>(keys.members(groupId), (cursor) =>
    unwrap(
      api.GET('/api/v1/groups/{group_id}/members', {
        params: { path: { group_id: groupId }, query: compact({ limit: PAGE_SIZE, cursor }) },
      }),
    ),
  );
}

export function usePutMember(groupId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ userId, body }: { userId: string; body: MembershipPut }) =>
      unwrap(
        api.PUT('/api/v1/groups/{group_id}/members/{user_id}', {
          params: { path: { group_id: groupId, user_id: userId } },
          body,
        }),
      ),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: keys.members(groupId) });
      void client.invalidateQueries({ queryKey: ME_KEY });
    },
  });
}

export function useRemoveMember(groupId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (userId: string) =>
      send(
        api.DELETE('/api/v1/groups/{group_id}/members/{user_id}', {
          params: { path: { group_id: groupId, user_id: userId } },
        }),
      ),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: keys.members(groupId) });
      void client.invalidateQueries({ queryKey: ME_KEY });
    },
  });
}
