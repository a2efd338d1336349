import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { queries, scopes } from '../keys';
import type { ClusterIsolationPut, DedicationCreate } from '../types';

export function useIsolationNodes() {
  return useQuery(queries.isolationNodes());
}

export function useOrgIsolation(orgId: string) {
  return useQuery(queries.orgIsolation(orgId));
}

export function useDedicate() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: DedicationCreate) => unwrap(api.POST('/api/v1/isolation/dedications', { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.isolation }),
  });
}

export function useUndedicate() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (dedicationId: string) =>
      send(
        api.DELETE('/api/v1/isolation/dedications/{dedication_id}', {
          params: { path: { dedication_id: dedicationId } },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.isolation }),
  });
}

export function useSetClusterIsolation() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ clusterId, body }: { clusterId: string; body: ClusterIsolationPut }) =>
      unwrap(api.PUT('/api/v1/clusters/{cluster_id}/isolation', { params: { path: { cluster_id: clusterId } }, body })),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: scopes.clusters }),
        client.invalidateQueries({ queryKey: scopes.isolation }),
      ]),
  });
}
