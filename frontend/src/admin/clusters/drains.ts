/** Drains: capacity taken out of service for maintenance, or after a hardware error. */
import { queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { scopes } from '../../api/keys';
import type { components } from '../../api/schema';

type Schemas = components['schemas'];

export type DrainOut = Schemas['DrainOut'];
export type DrainIn = Schemas['DrainIn'];
export type DrainScope = DrainIn['scope'];
export type CardDrainOut = Schemas['CardDrainOut'];

/**
 * The active drains of every cluster. Under the cards' prefix: a drain is started and ended
 * with `cards.changed`, its progress moves with `session.changed` and `notice.changed`, and
 * each of those refreshes the cards.
 */
export const activeDrainsQuery = () =>
  queryOptions({
    queryKey: [...scopes.cards, 'drains', 'active'],
    queryFn: () => unwrap(api.GET('/api/v1/drains', { params: { query: { active: true } } })),
  });

export function useActiveDrains(enabled = true) {
  return useQuery({ ...activeDrainsQuery(), enabled });
}

/** A drain changes the cards it covers, and its notices the queue's and the sessions' views. */
function useDrainMutation<T>(mutationFn: (input: T) => Promise<DrainOut>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn,
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: scopes.cards }),
        client.invalidateQueries({ queryKey: scopes.queue }),
      ]),
  });
}

export function useStartDrain() {
  return useDrainMutation((body: DrainIn) => unwrap(api.POST('/api/v1/drains', { body })));
}

/** `end`: the maintenance is done; `cancel`: called off, its pending notices withdrawn. */
export function useFinishDrain() {
  return useDrainMutation(({ drainId, how }: { drainId: string; how: 'end' | 'cancel' }) => {
    const params = { params: { path: { drain_id: drainId } } };
    return unwrap(
      how === 'end'
        ? api.POST('/api/v1/drains/{drain_id}/end', params)
        : api.POST('/api/v1/drains/{drain_id}/cancel', params),
    );
  });
}
