import { Button, Group, Table, type TableProps } from '@mantine/core';
import type { ReactNode } from 'react';
import type { PagedList } from '../api/paged';
import { QueryState } from './QueryState';

interface PagedTableProps<T> extends Omit<TableProps, 'children'> {
  list: PagedList<T>;
  /** Shown when the list has no items. */
  empty: ReactNode;
  /** The header cells. */
  head: ReactNode;
  /** One `<Table.Tr>`, with its key, per item. */
  row: (item: T) => ReactNode;
  /** Scroll sideways below this width instead of squeezing the columns. */
  minWidth?: number;
}

/** A cursor-paginated list as a table: its loading, error and empty states, and "Load more". */
export function PagedTable<T>({ list, empty, head, row, minWidth, ...tableProps }: PagedTableProps<T>) {
  const table = (
    <Table {...tableProps}>
      <Table.Thead>
        <Table.Tr>{head}</Table.Tr>
      </Table.Thead>
      <Table.Tbody>{list.items.map(row)}</Table.Tbody>
    </Table>
  );
  return (
    <QueryState query={list} isEmpty={list.items.length === 0} empty={empty}>
      {minWidth ? <Table.ScrollContainer minWidth={minWidth}>{table}</Table.ScrollContainer> : table}
      {list.hasNextPage && (
        <Group justify="center" mt="md">
          <Button variant="default" onClick={list.fetchNextPage} loading={list.isFetchingNextPage}>
            Load more
          </Button>
        </Group>
      )}
    </QueryState>
  );
}
