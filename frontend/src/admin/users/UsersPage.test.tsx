import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { emptyPage, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { json, stubFetch } from '../../test/fetchStub';
import { renderApp } from '../../test/render';

const grace = {
  id: '00000000-0000-4000-8000-000000000009',
  email: 'grace@example.org',
  name: 'Grace Hopper',
  active: true,
  must_change_password: true,
  is_super_admin: false,
  created_at: '2025-02-01T00:00:00Z',
};

describe('users', () => {
  it('creates a user with the CSRF token and shows the strength verdict', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN])),
      'GET /api/v1/users': json(200, emptyPage),
      'GET /api/v1/orgs': json(200, emptyPage),
      'POST /api/v1/auth/password-check': json(200, {
        acceptable: true,
        score: 3,
        warning: '',
        suggestions: [],
        min_length: 12,
      }),
      'POST /api/v1/users': json(201, grace),
    });
    renderApp('/admin/users');
    const user = userEvent.setup();

    expect(await screen.findByText('No users yet.')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'New user' }));
    const dialog = await screen.findByRole('dialog', { name: 'New user' });
    await user.type(within(dialog).getByLabelText('Email'), 'grace@example.org');
    await user.type(within(dialog).getByLabelText('Name'), 'Grace Hopper');
    await user.type(within(dialog).getByLabelText('Initial password'), 'compiler cobol navy 1952');
    expect(await within(dialog).findByText('Good')).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Create user' }));

    expect(await screen.findByText(/Created Grace Hopper/)).toBeInTheDocument();
    const [created] = api.callsTo('POST', '/api/v1/users');
    expect(created.body).toEqual({
      email: 'grace@example.org',
      name: 'Grace Hopper',
      initial_password: 'compiler cobol navy 1952',
      group_id: null,
      role: null,
    });
    expect(created.headers.get('X-CSRF-Token')).toBe('csrf-admin');
  });

  it('asks before deactivating a user', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/users': json(200, { items: [grace], next_cursor: null }),
      [`PATCH /api/v1/users/${grace.id}`]: json(200, { ...grace, active: false }),
    });
    renderApp('/admin/users');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Deactivate' }));
    const dialog = await screen.findByRole('dialog', { name: 'Deactivate user' });
    await user.click(within(dialog).getByRole('button', { name: 'Deactivate' }));

    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Deactivate user' })).not.toBeInTheDocument());
    expect(api.callsTo('PATCH', `/api/v1/users/${grace.id}`)[0].body).toEqual({ active: false });
  });
});
