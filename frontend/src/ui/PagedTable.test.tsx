import { Table } from '@mantine/core';
import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import type { PagedList } from '../api/paged';
import { renderUi } from '../test/renderUi';
import { PagedTable, type PagedColumn } from './PagedTable';
import { useTableState } from './tableState';
import { useLocation } from 'react-router';

interface Row {
  id: string;
  name: string;
}

function list(overrides: Partial<PagedList<Row>> = {}): PagedList<Row> {
  return {
    items: [],
    isPending: false,
    error: null,
    refetch: vi.fn(),
    hasNextPage: false,
    isFetchingNextPage: false,
    fetchNextPage: vi.fn(),
    ...overrides,
  };
}

function renderTable(rows: PagedList<Row>) {
  return renderUi(
    <PagedTable
      list={rows}
      empty="No rows yet."
      aria-label="Rows"
      head={<Table.Th>Name</Table.Th>}
      row={(row) => (
        <Table.Tr key={row.id}>
          <Table.Td>{row.name}</Table.Td>
        </Table.Tr>
      )}
    />,
  );
}

describe('PagedTable', () => {
  it('lists each item under the header and offers the next page', async () => {
    const rows = list({ items: [{ id: '1', name: 'Ada' }, { id: '2', name: 'Grace' }], hasNextPage: true });
    renderTable(rows);
    const table = screen.getByRole('table', { name: 'Rows' });
    const cells = within(table).getAllByRole('row').map((row) => row.textContent);
    expect(cells).toEqual(['Name', 'Ada', 'Grace']);
    await userEvent.setup().click(screen.getByRole('button', { name: 'Load more' }));
    expect(rows.fetchNextPage).toHaveBeenCalledOnce();
  });

  it('offers no next page at the end of the list', () => {
    renderTable(list({ items: [{ id: '1', name: 'Ada' }] }));
    expect(screen.queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();
  });

  it('says when there is nothing, and shows loading and errors without a table', () => {
    const { unmount } = renderTable(list());
    expect(screen.getByText('No rows yet.')).toBeInTheDocument();
    expect(screen.queryByRole('table')).not.toBeInTheDocument();
    unmount();

    renderTable(list({ isPending: true }));
    expect(screen.getByRole('status')).toBeInTheDocument();
    expect(screen.queryByRole('table')).not.toBeInTheDocument();
  });
});

const COLUMNS: PagedColumn<Row>[] = [
  { id: 'name', header: 'Name', sortValue: (row) => row.name, cell: (row) => row.name },
  { id: 'id', header: 'Id', cell: (row) => row.id },
];

function SortedTable({ rows, columns = COLUMNS }: { rows: PagedList<Row>; columns?: PagedColumn<Row>[] }) {
  const view = useTableState({ sortable: columns.map((c) => c.id) });
  const location = useLocation();
  return (
    <>
      <output aria-label="search">{location.search}</output>
      <PagedTable list={rows} columns={columns} rowKey={(row) => row.id} state={view} empty="None." aria-label="Rows" />
    </>
  );
}

const names = () =>
  within(screen.getByRole('table', { name: 'Rows' }))
    .getAllByRole('row')
    .slice(1)
    .map((row) => row.firstChild?.textContent);

describe('PagedTable columns', () => {
  const items = [
    { id: '1', name: 'grace' },
    { id: '2', name: 'Ada' },
    { id: '3', name: 'Edsger' },
  ];

  it('sorts the whole list in the browser and keeps the sort in the URL', async () => {
    renderUi(<SortedTable rows={list({ items })} />, '/rows?sort=-name&unknown=1');
    expect(names()).toEqual(['grace', 'Edsger', 'Ada']);
    expect(screen.getByRole('columnheader', { name: /Name/ })).toHaveAttribute('aria-sort', 'descending');
    await userEvent.setup().click(screen.getByRole('button', { name: /Name/ }));
    expect(names()).toEqual(['Ada', 'Edsger', 'grace']);
    expect(screen.getByLabelText('search')).toHaveTextContent('?sort=name&unknown=1');
    expect(screen.queryByRole('button', { name: /Id/ })).not.toBeInTheDocument();
  });

  it('does not sort the first page of a longer list, and says why', () => {
    renderUi(<SortedTable rows={list({ items, hasNextPage: true })} />, '/rows?sort=name');
    expect(names()).toEqual(['grace', 'Ada', 'Edsger']);
    expect(screen.getByRole('button', { name: /Name/ })).toBeDisabled();
    expect(screen.getByText(/waits until every page is loaded/)).toBeInTheDocument();
  });

  it('leaves a server sort to the server, over every page', async () => {
    const server: PagedColumn<Row>[] = [{ id: 'name', header: 'Name', serverSort: true, cell: (row) => row.name }];
    renderUi(<SortedTable rows={list({ items, hasNextPage: true })} columns={server} />, '/rows');
    await userEvent.setup().click(screen.getByRole('button', { name: /Name/ }));
    expect(screen.getByLabelText('search')).toHaveTextContent('?sort=name');
    expect(names()).toEqual(['grace', 'Ada', 'Edsger']);
    expect(screen.queryByText(/waits until every page/)).not.toBeInTheDocument();
  });
});
