import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { PAGE_SIZE, queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { ClusterOut, ClusterRegister } from '../types';

export function useClusters(limit = PAGE_SIZE) {
  return usePaged<ClusterOut>(queries.clusters(limit));
}

export function useCluster(clusterId: string) {
  return useQuery(queries.cluster(clusterId));
}

export function useRegisterCluster() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: ClusterRegister) => unwrap(api.POST('/api/v1/clusters', { body })),
    // The request carries a kubeconfig with credentials: drop it from the cache at once.
    gcTime: 0,
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.clusterLists }),
  });
}

export function useRemoveCluster() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (clusterId: string) =>
      send(api.DELETE('/api/v1/clusters/{cluster_id}', { params: { path: { cluster_id: clusterId } } })),
    onSuccess: (_, clusterId) => {
      client.removeQueries({ queryKey: queries.cluster(clusterId).queryKey });
      return client.invalidateQueries({ queryKey: scopes.clusterLists });
    },
  });
}
