import { Button, Group, Table, Text, UnstyledButton, type TableProps, type TableTdProps } from '@mantine/core';
import { IconArrowDown, IconArrowUp, IconArrowsSort } from '@tabler/icons-react';
import {
  getCoreRowModel,
  getSortedRowModel,
  useReactTable,
  type ColumnDef,
  type SortingState,
} from '@tanstack/react-table';
import { useMemo, type ReactNode } from 'react';
import type { PagedList } from '../api/paged';
import { QueryState } from './QueryState';
import type { SortState, TableState } from './tableState';

/** One column, declared once: its header, its cell, and how (if at all) it sorts. */
export interface PagedColumn<T> {
  id: string;
  /** The header's text; for a column without a visible header (row actions), give `label` instead. */
  header?: string;
  label?: string;
  cell: (item: T) => ReactNode;
  /**
   * Sorts the whole list in the browser, once every page is loaded. While pages are left the
   * column cannot be sorted: an order over the first page only would mislead.
   */
  sortValue?: (item: T) => string | number | null | undefined;
  /** The server sorts by this column (the route's `sort` parameter): the order holds over every page. */
  serverSort?: boolean;
  /** Props of each cell (`ta`, `maw`, `style`), and of the header cell where they align it. */
  td?: TableTdProps;
}

interface CommonProps<T> extends Omit<TableProps, 'children'> {
  list: PagedList<T>;
  /** Shown when the list has no items. */
  empty: ReactNode;
  /** Scroll sideways below this width instead of squeezing the columns. */
  minWidth?: number;
}

interface ColumnProps<T> extends CommonProps<T> {
  columns: PagedColumn<T>[];
  rowKey: (item: T) => string;
  /** Where the sort lives (`useTableState`); without it no column sorts. */
  state?: Pick<TableState, 'sort' | 'setSort'>;
  /** The order the server returns when no sort is chosen, shown on its column. */
  defaultSort?: SortState;
}

/** The older shape, kept for callers not yet on columns. */
interface RowProps<T> extends CommonProps<T> {
  head: ReactNode;
  /** One `<Table.Tr>`, with its key, per item. */
  row: (item: T) => ReactNode;
}

export type PagedTableProps<T> = ColumnProps<T> | RowProps<T>;

/** A cursor-paginated list as a table: its loading, error and empty states, sorting, and "Load more". */
export function PagedTable<T>(props: PagedTableProps<T>) {
  if ('columns' in props) return <ColumnTable {...props} />;
  const { list, empty, head, row, minWidth, ...tableProps } = props;
  return (
    <Frame list={list} empty={empty} minWidth={minWidth}>
      <Table {...tableProps}>
        <Table.Thead>
          <Table.Tr>{head}</Table.Tr>
        </Table.Thead>
        <Table.Tbody>{list.items.map(row)}</Table.Tbody>
      </Table>
    </Frame>
  );
}

function Frame<T>({
  list,
  empty,
  minWidth,
  note,
  children,
}: {
  list: PagedList<T>;
  empty: ReactNode;
  minWidth?: number;
  note?: ReactNode;
  children: ReactNode;
}) {
  return (
    <QueryState query={list} isEmpty={list.items.length === 0} empty={empty}>
      {minWidth ? <Table.ScrollContainer minWidth={minWidth}>{children}</Table.ScrollContainer> : children}
      {note}
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

function compareValues(a: unknown, b: unknown): number {
  if (a == null || a === '') return b == null || b === '' ? 0 : 1;
  if (b == null || b === '') return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: 'base' });
}

function ColumnTable<T>({ list, empty, minWidth, columns, rowKey, state, defaultSort, ...tableProps }: ColumnProps<T>) {
  const complete = !list.hasNextPage;
  const chosen = state?.sort ?? null;
  const column = chosen ? columns.find((c) => c.id === chosen.id) : undefined;
  // A browser sort applies only over the whole list; a server sort is already in the rows' order.
  const browserSort = column?.sortValue && !column.serverSort && complete ? chosen : null;
  const shown = chosen && column && (column.serverSort || browserSort) ? chosen : (defaultSort ?? null);
  const sorting: SortingState = browserSort ? [browserSort] : [];

  const defs = useMemo<ColumnDef<T>[]>(
    () =>
      columns.map((c) => ({
        id: c.id,
        header: c.header ?? '',
        accessorFn: c.sortValue ? (item: T) => c.sortValue!(item) ?? null : undefined,
        enableSorting: Boolean(c.sortValue) && !c.serverSort,
        sortingFn: (a, b, id) => compareValues(a.getValue(id), b.getValue(id)),
      })),
    [columns],
  );
  const byId = useMemo(() => new Map(columns.map((c) => [c.id, c])), [columns]);
  const table = useReactTable({
    data: list.items,
    columns: defs,
    state: { sorting },
    manualSorting: !browserSort,
    getRowId: (item) => rowKey(item),
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
  });

  const waitsForPages = !complete && columns.some((c) => c.sortValue && !c.serverSort);
  const note = waitsForPages ? (
    <Text size="xs" c="dimmed" mt="xs">
      Sorting by {columns.filter((c) => c.sortValue && !c.serverSort).map((c) => c.header?.toLowerCase()).join(', ')}{' '}
      covers the whole list, so it waits until every page is loaded.
    </Text>
  ) : null;

  return (
    <Frame list={list} empty={empty} minWidth={minWidth} note={note}>
      <Table {...tableProps}>
        <Table.Thead>
          <Table.Tr>
            {columns.map((c) => (
              <HeaderCell
                key={c.id}
                column={c}
                sort={shown?.id === c.id ? shown : null}
                sortable={Boolean(state) && (Boolean(c.serverSort) || (Boolean(c.sortValue) && complete))}
                onSort={(desc) => state?.setSort({ id: c.id, desc })}
              />
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {table.getRowModel().rows.map((row) => (
            <Table.Tr key={row.id}>
              {row.getVisibleCells().map((cell) => (
                <Table.Td key={cell.column.id} {...byId.get(cell.column.id)?.td}>
                  {/* Called, not rendered as a component: callers declare cells inline, and a new
                      function per render would remount the cell (and close its open dialog). */}
                  {byId.get(cell.column.id)?.cell(row.original)}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Frame>
  );
}

function HeaderCell<T>({
  column,
  sort,
  sortable,
  onSort,
}: {
  column: PagedColumn<T>;
  sort: SortState | null;
  sortable: boolean;
  onSort: (desc: boolean) => void;
}) {
  const align = column.td?.ta;
  const label = column.header;
  if (!label) return <Table.Th aria-label={column.label} />;
  const canSort = Boolean(column.serverSort || column.sortValue);
  if (!canSort) return <Table.Th ta={align}>{label}</Table.Th>;
  const Icon = sort ? (sort.desc ? IconArrowDown : IconArrowUp) : IconArrowsSort;
  const ariaSort = sort ? (sort.desc ? 'descending' : 'ascending') : 'none';
  return (
    <Table.Th ta={align} aria-sort={ariaSort}>
      <UnstyledButton
        onClick={() => onSort(sort ? !sort.desc : false)}
        disabled={!sortable}
        title={sortable ? `Sort by ${label.toLowerCase()}` : 'Load every page to sort by this column'}
        style={{ display: 'inline-flex', alignItems: 'center', gap: 4, font: 'inherit', fontWeight: 'inherit' }}
      >
        {label}
        <Icon size={14} aria-hidden stroke={1.5} opacity={sort ? 1 : sortable ? 0.5 : 0.25} />
      </UnstyledButton>
    </Table.Th>
  );
}
