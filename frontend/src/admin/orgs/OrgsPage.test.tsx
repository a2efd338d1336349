import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { emptyPage, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { apiError, json, pending, stubFetch } from '../../test/fetchStub';
import { renderApp } from '../../test/render';

const admin = json(200, makeMe({}, [SUPER_ADMIN]));
const org = (n: number) => ({ id: `00000000-0000-4000-8000-00000000000${n}`, name: `Org ${n}`, created_at: '2025-01-01T00:00:00Z' });

describe('organizations list', () => {
  it('shows a loading state while the list is on its way', async () => {
    stubFetch({ 'GET /api/v1/me': admin, 'GET /api/v1/orgs': pending() });
    renderApp('/admin/orgs');

    expect(await screen.findByText('Loading…')).toBeInTheDocument();
  });

  it('shows an empty state', async () => {
    stubFetch({ 'GET /api/v1/me': admin, 'GET /api/v1/orgs': json(200, emptyPage) });
    renderApp('/admin/orgs');

    expect(await screen.findByText('No organizations yet.')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'New organization' })).toBeInTheDocument();
  });

  it('shows the server error and retries on request', async () => {
    let fail = true;
    stubFetch({
      'GET /api/v1/me': admin,
      'GET /api/v1/orgs': () =>
        fail ? apiError(500, 'internal', 'Database unavailable.') : json(200, { items: [org(1)], next_cursor: null }),
    });
    renderApp('/admin/orgs');
    const user = userEvent.setup();

    expect(await screen.findByRole('alert')).toHaveTextContent('Database unavailable.');
    fail = false;
    await user.click(screen.getByRole('button', { name: 'Retry' }));

    expect(await screen.findByRole('link', { name: 'Org 1' })).toBeInTheDocument();
  });

  it('loads the next page with the cursor', async () => {
    const api = stubFetch({
      'GET /api/v1/me': admin,
      'GET /api/v1/orgs': ({ query }) =>
        query.get('cursor') === 'page-2'
          ? json(200, { items: [org(2)], next_cursor: null })
          : json(200, { items: [org(1)], next_cursor: 'page-2' }),
    });
    renderApp('/admin/orgs');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Load more' }));

    expect(await screen.findByRole('link', { name: 'Org 2' })).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Org 1' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/orgs')[0].query.get('limit')).toBe('50');
  });

  it('asks before deleting and shows why the server refused', async () => {
    const api = stubFetch({
      'GET /api/v1/me': admin,
      'GET /api/v1/orgs': json(200, { items: [org(1)], next_cursor: null }),
      'DELETE /api/v1/orgs/00000000-0000-4000-8000-000000000001': apiError(
        409,
        'org_not_empty',
        'Remove the groups of this organization first.',
      ),
    });
    renderApp('/admin/orgs');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Delete' }));
    const dialog = await screen.findByRole('dialog', { name: 'Delete organization' });
    expect(api.calls.filter((c) => c.method === 'DELETE')).toHaveLength(0);
    await user.click(screen.getByRole('button', { name: 'Delete organization' }));

    expect(await screen.findByText('Remove the groups of this organization first.')).toBeInTheDocument();
    expect(dialog).toBeInTheDocument();
  });
});
