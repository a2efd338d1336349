import { useCallback, useMemo } from 'react';
import { useSearchParams } from 'react-router';

/** One column sorted, one way. */
export interface SortState {
  id: string;
  desc: boolean;
}

/** A table's sort and filters, kept in the URL's search params so a link or a reload shows the same view. */
export interface TableState {
  sort: SortState | null;
  setSort: (next: SortState | null) => void;
  /** A filter's value, '' when it is not set. */
  filter: (name: string) => string;
  setFilter: (name: string, value: string | null | undefined) => void;
}

export interface TableStateOptions {
  /** Names params apart when a page holds several tables (`members.sort`); none for a page's one table. */
  prefix?: string;
  /** The column ids that may be sorted; any other `sort` in the URL is ignored. */
  sortable: readonly string[];
  /** The filter names this table reads; other params are left alone and never read. */
  filters?: readonly string[];
}

/** The longest filter value read from the URL: a pasted link cannot make a request the server refuses. */
export const MAX_PARAM_LENGTH = 200;

export function paramName(prefix: string | undefined, name: string): string {
  return prefix ? `${prefix}.${name}` : name;
}

/** `name` sorts up, `-name` sorts down; anything else, or a column not sortable, is no sort. */
export function parseSort(value: string | null, sortable: readonly string[]): SortState | null {
  if (!value) return null;
  const desc = value.startsWith('-');
  const id = desc ? value.slice(1) : value;
  return sortable.includes(id) ? { id, desc } : null;
}

export function formatSort(sort: SortState | null): string | null {
  return sort ? `${sort.desc ? '-' : ''}${sort.id}` : null;
}

/** A filter as read from the URL: bounded, no control characters, '' when absent. */
export function parseFilter(value: string | null): string {
  if (!value) return '';
  return value.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, MAX_PARAM_LENGTH);
}

/** `params` with `name` set to `value`, or removed when it is empty. */
export function withParam(params: URLSearchParams, name: string, value: string | null | undefined): URLSearchParams {
  const next = new URLSearchParams(params);
  if (value) next.set(name, value);
  else next.delete(name);
  return next;
}

/** Sort and filter state of one table, read from and written to the URL (replacing the entry, not adding one). */
export function useTableState({ prefix, sortable, filters = [] }: TableStateOptions): TableState {
  const [params, setParams] = useSearchParams();
  const sortKey = paramName(prefix, 'sort');
  const sortParam = params.get(sortKey);
  const sortableKey = sortable.join('\n');
  const sort = useMemo(() => parseSort(sortParam, sortableKey.split('\n')), [sortParam, sortableKey]);

  const setSort = useCallback(
    (next: SortState | null) => setParams((current) => withParam(current, sortKey, formatSort(next)), { replace: true }),
    [setParams, sortKey],
  );
  const filter = useCallback(
    (name: string) => (filters.includes(name) ? parseFilter(params.get(paramName(prefix, name))) : ''),
    [filters, params, prefix],
  );
  const setFilter = useCallback(
    (name: string, value: string | null | undefined) =>
      setParams((current) => withParam(current, paramName(prefix, name), value?.slice(0, MAX_PARAM_LENGTH)), {
        replace: true,
      }),
    [setParams, prefix],
  );
  return { sort, setSort, filter, setFilter };
}
