import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { queries, scopes } from '../keys';
import type { CardPool, GpuModelIn, MigInstanceIn, PolicyScope, TierIn } from '../types';

export function useClusterCards(clusterId: string) {
  return useQuery(queries.clusterCards(clusterId));
}

export function useMigLayouts(cardId: string, enabled = true) {
  return useQuery({ ...queries.migLayouts(cardId), enabled });
}

export function useSetPool() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ cardId, pool }: { cardId: string; pool: CardPool }) =>
      unwrap(api.PUT('/api/v1/cards/{card_id}/pool', { params: { path: { card_id: cardId } }, body: { pool } })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.cards }),
  });
}

export function useSetMigLayout() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ cardId, instances }: { cardId: string; instances: MigInstanceIn[] }) =>
      unwrap(
        api.PUT('/api/v1/cards/{card_id}/mig-layout', { params: { path: { card_id: cardId } }, body: { instances } }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.cards }),
  });
}

export function useGpuModels() {
  return useQuery(queries.gpuModels());
}

/** Every change to models and tiers invalidates them all: prices show on several screens. */
function useTierMutation<T, R>(mutationFn: (input: T) => Promise<R>) {
  const client = useQueryClient();
  return useMutation({ mutationFn, onSuccess: () => client.invalidateQueries({ queryKey: scopes.tiers }) });
}

export function useTiers(groupId: string | null = null) {
  return useQuery(queries.tiers(groupId));
}

export function useCreateGpuModel() {
  return useTierMutation((body: GpuModelIn) => unwrap(api.POST('/api/v1/gpu-models', { body })));
}

export function useSetExclusivePrice() {
  return useTierMutation(({ modelId, price }: { modelId: string; price: string }) =>
    unwrap(
      api.PATCH('/api/v1/gpu-models/{model_id}', {
        params: { path: { model_id: modelId } },
        body: { exclusive_price: price },
      }),
    ),
  );
}

export function useCreateTier() {
  return useTierMutation(({ modelId, body }: { modelId: string; body: TierIn }) =>
    unwrap(api.POST('/api/v1/gpu-models/{model_id}/tiers', { params: { path: { model_id: modelId } }, body })),
  );
}

/** `price: null` puts the tier back on its default price (the exclusive price times its share). */
export function useSetTierPrice() {
  return useTierMutation(({ tierId, price }: { tierId: string; price: string | null }) =>
    unwrap(
      api.PATCH('/api/v1/tiers/{tier_id}', { params: { path: { tier_id: tierId } }, body: { price_per_hour: price } }),
    ),
  );
}

export function useRetireTier() {
  return useTierMutation((tierId: string) =>
    send(api.DELETE('/api/v1/tiers/{tier_id}', { params: { path: { tier_id: tierId } } })),
  );
}

export function usePolicy(scope: PolicyScope, scopeId: string | null, enabled = true) {
  return useQuery({ ...queries.policy(scope, scopeId), enabled });
}

export function useEffectivePolicy(userId: string | null, groupId: string | null) {
  return useQuery({ ...queries.effectivePolicy(userId ?? '', groupId), enabled: userId !== null });
}

type PolicyTarget = { scope: PolicyScope; scopeId: string | null };

function putPolicy({ scope, scopeId }: PolicyTarget, values: Record<string, unknown>) {
  const body = { values };
  if (scope === 'global' || scopeId === null) return unwrap(api.PUT('/api/v1/policies/global', { body }));
  const params = { path: { scope_id: scopeId } };
  if (scope === 'organization') return unwrap(api.PUT('/api/v1/policies/orgs/{scope_id}', { params, body }));
  if (scope === 'group') return unwrap(api.PUT('/api/v1/policies/groups/{scope_id}', { params, body }));
  return unwrap(api.PUT('/api/v1/policies/users/{scope_id}', { params, body }));
}

function deletePolicy({ scope, scopeId }: PolicyTarget) {
  if (scope === 'global' || scopeId === null) return send(api.DELETE('/api/v1/policies/global'));
  const params = { path: { scope_id: scopeId } };
  if (scope === 'organization') return send(api.DELETE('/api/v1/policies/orgs/{scope_id}', { params }));
  if (scope === 'group') return send(api.DELETE('/api/v1/policies/groups/{scope_id}', { params }));
  return send(api.DELETE('/api/v1/policies/users/{scope_id}', { params }));
}

/** A policy change may move any effective value: invalidate every policy query. */
export function useSavePolicy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ target, values }: { target: PolicyTarget; values: Record<string, unknown> }) =>
      putPolicy(target, values),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.policies }),
  });
}

export function useClearPolicy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: deletePolicy,
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.policies }),
  });
}

export function useQueue(scope: 'own' | 'all') {
  return useQuery(queries.queue(scope));
}

export function useCancelRequest() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (requestId: string) =>
      send(api.DELETE('/api/v1/queue/{request_id}', { params: { path: { request_id: requestId } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.queue }),
  });
}
