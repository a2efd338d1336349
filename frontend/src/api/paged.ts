import {
  useInfiniteQuery,
  type InfiniteData,
  type QueryKey,
  type UseInfiniteQueryOptions,
} from '@tanstack/react-query';
import { useMemo } from 'react';
import type { Page } from './keys';

export interface PagedList<T> {
  items: T[];
  isPending: boolean;
  error: Error | null;
  refetch: () => void;
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => void;
}

type PagedOptions<T> = UseInfiniteQueryOptions<Page<T>, Error, InfiniteData<Page<T>>, QueryKey, string | undefined>;

/** A cursor-paginated list (`queries.*` in keys.ts), its pages flattened into one list. */
export function usePaged<T>(options: PagedOptions<T>, enabled = true): PagedList<T> {
  const query = useInfiniteQuery({ ...options, enabled });
  const items = useMemo(() => query.data?.pages.flatMap((page) => page.items) ?? [], [query.data]);
  return {
    items,
    isPending: query.isPending,
    error: query.error,
    refetch: () => void query.refetch(),
    hasNextPage: query.hasNextPage,
    isFetchingNextPage: query.isFetchingNextPage,
    fetchNextPage: () => void query.fetchNextPage(),
  };
}
