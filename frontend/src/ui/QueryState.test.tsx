import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { ApiError } from '../api/errors';
import { renderUi } from '../test/renderUi';
import { QueryState } from './QueryState';

describe('QueryState', () => {
  it('shows loading while the query is pending', () => {
    renderUi(
      <QueryState query={{ isPending: true, error: null }}>
        <p>content</p>
      </QueryState>,
    );
    expect(screen.getByRole('status')).toHaveTextContent('Loading');
    expect(screen.queryByText('content')).not.toBeInTheDocument();
  });

  it('shows the error and retries on request', async () => {
    const refetch = vi.fn();
    renderUi(
      <QueryState query={{ isPending: false, error: new ApiError(503, 'busy', 'The server is busy.'), refetch }}>
        <p>content</p>
      </QueryState>,
    );
    expect(screen.getByRole('alert')).toHaveTextContent('The server is busy.');
    await userEvent.setup().click(screen.getByRole('button', { name: 'Retry' }));
    expect(refetch).toHaveBeenCalledOnce();
  });

  it('shows the empty message instead of empty content', () => {
    renderUi(
      <QueryState query={{ isPending: false, error: null }} isEmpty empty="Nothing here yet.">
        <p>content</p>
      </QueryState>,
    );
    expect(screen.getByText('Nothing here yet.')).toBeInTheDocument();
    expect(screen.queryByText('content')).not.toBeInTheDocument();
  });

  it('shows the content once loaded', () => {
    renderUi(
      <QueryState query={{ isPending: false, error: null }} isEmpty={false} empty="Nothing here yet.">
        <p>content</p>
      </QueryState>,
    );
    expect(screen.getByText('content')).toBeInTheDocument();
  });
});
