import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { PAGE_SIZE, queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { OrgOut } from '../types';

export function useOrgs(q = '', limit = PAGE_SIZE) {
  return usePaged<OrgOut>(queries.orgs(q, limit));
}

export function useOrg(orgId: string) {
  return useQuery(queries.org(orgId));
}

export function useCreateOrg() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => unwrap(api.POST('/api/v1/orgs', { body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.orgs }),
  });
}

export function useRenameOrg() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ orgId, name }: { orgId: string; name: string }) =>
      unwrap(api.PATCH('/api/v1/orgs/{org_id}', { params: { path: { org_id: orgId } }, body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.orgs }),
  });
}

export function useDeleteOrg() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (orgId: string) => send(api.DELETE('/api/v1/orgs/{org_id}', { params: { path: { org_id: orgId } } })),
    onSuccess: (_, orgId) => {
      client.removeQueries({ queryKey: queries.org(orgId).queryKey });
      return client.invalidateQueries({ queryKey: scopes.orgLists });
    },
  });
}
