import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, compact, send, unwrap } from '../client';
import { keys } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { ClusterOut, ClusterRegister } from '../types';

export function useClusters(limit = PAGE_SIZE) {
  return usePaged<ClusterOut>([...keys.clusters, 'list', limit], (cursor) =>
    unwrap(api.GET('/api/v1/clusters', { params: { query: compact({ limit, cursor }) } })),
  );
}

export function useCluster(clusterId: string) {
  return useQuery({
    queryKey: keys.cluster(clusterId),
    queryFn: () =>
      unwrap(api.GET('/api/v1/clusters/{cluster_id}', { params: { path: { cluster_id: clusterId } } })),
  });
}

export function useRegisterCluster() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: ClusterRegister) => unwrap(api.POST('/api/v1/clusters', { body })),
    // The request carries a kubeconfig with credentials: drop it from the cache at once.
    gcTime: 0,
    onSuccess: () => client.invalidateQueries({ queryKey: [...keys.clusters, 'list'] }),
  });
}

export function useRemoveCluster() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (clusterId: string) =>
      send(api.DELETE('/api/v1/clusters/{cluster_id}', { params: { path: { cluster_id: clusterId } } })),
    onSuccess: (_, clusterId) => {
      client.removeQueries({ queryKey: keys.cluster(clusterId) });
      return client.invalidateQueries({ queryKey: [...keys.clusters, 'list'] });
    },
  });
}
