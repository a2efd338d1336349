import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, compact, send, unwrap } from '../client';
import { keys } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { OrgOut } from '../types';

export function useOrgs(q = '', limit = PAGE_SIZE) {
  return usePaged<OrgOut>([...keys.orgs, 'list', q, limit], (cursor) =>
    unwrap(api.GET('/api/v1/orgs', { params: { query: compact({ q, limit, cursor }) } })),
  );
}

export function useOrg(orgId: string) {
  return useQuery({
    queryKey: keys.org(orgId),
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org_id}', { params: { path: { org_id: orgId } } })),
  });
}

export function useCreateOrg() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => unwrap(api.POST('/api/v1/orgs', { body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.orgs }),
  });
}

export function useRenameOrg() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ orgId, name }: { orgId: string; name: string }) =>
      unwrap(api.PATCH('/api/v1/orgs/{org_id}', { params: { path: { org_id: orgId } }, body: { name } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.orgs }),
  });
}

export function useDeleteOrg() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (orgId: string) => send(api.DELETE('/api/v1/orgs/{org_id}', { params: { path: { org_id: orgId } } })),
    onSuccess: (_, orgId) => {
      client.removeQueries({ queryKey: keys.org(orgId) });
      return client.invalidateQueries({ queryKey: [...keys.orgs, 'list'] });
    },
  });
}
