import { Table } from '@mantine/core';
import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import type { PagedList } from '../api/paged';
import { renderUi } from '../test/renderUi';
import { PagedTable } from './PagedTable';

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
