import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { queries } from '../keys';
import type { UsageQuery } from '../types';

/** Usage is counted up to a few minutes ago and changes slowly: asked again this often. */
export const USAGE_REFRESH_MS = 5 * 60_000;

/** A usage report; while another period or grouping loads, the last answer stays shown. */
export function useUsage(query: UsageQuery) {
  return useQuery({
    ...queries.usage(query),
    refetchInterval: USAGE_REFRESH_MS,
    placeholderData: keepPreviousData,
  });
}

/** The sessions that idled most over the period. */
export function useIdleSessions(since: string, until: string) {
  return useQuery({ ...queries.idleSessions(since, until), refetchInterval: USAGE_REFRESH_MS });
}

/** Right-sizing advice for an image on a tier, from the caller's own recent sessions. */
export function useSizing(image: string | null, tierId: string | null) {
  return useQuery({
    ...queries.sizing(image ?? '', tierId ?? ''),
    enabled: Boolean(image && tierId),
    staleTime: USAGE_REFRESH_MS,
  });
}
