import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { RoleGrantOut } from '../../api/types';
import { emptyPage, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { apiError, json, stubFetch } from '../../test/fetchStub';
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

  const admiral = {
    ...grace,
    id: '00000000-0000-4000-8000-00000000000a',
    name: 'Anita Borg',
    email: 'anita@example.org',
    is_super_admin: true,
  };
  const verdict = { acceptable: true, score: 3, warning: '', suggestions: [], min_length: 12 };
  const groupAdmin: RoleGrantOut = {
    role: 'group_admin',
    org_id: '00000000-0000-4000-8000-0000000000b1',
    group_id: '00000000-0000-4000-8000-0000000000a1',
    org_name: 'Research',
    group_name: 'Vision lab',
  };

  it('resets a password after showing its strength and asking to confirm', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN])),
      'GET /api/v1/users': json(200, { items: [grace], next_cursor: null }),
      'POST /api/v1/auth/password-check': json(200, verdict),
      [`POST /api/v1/users/${grace.id}/password-reset`]: json(200, { ...grace, must_change_password: true }),
    });
    renderApp('/admin/users');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Reset password' }));
    const dialog = await screen.findByRole('dialog', { name: 'Reset password' });
    await user.type(within(dialog).getByLabelText('New initial password'), 'harbor lantern quartz 77');
    expect(await within(dialog).findByText('Good')).toBeInTheDocument();
    expect(api.callsTo('POST', `/api/v1/users/${grace.id}/password-reset`)).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText(/signed out everywhere/)).toBeInTheDocument();
    expect(api.callsTo('POST', `/api/v1/users/${grace.id}/password-reset`)).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Reset password' }));

    expect(await screen.findByText(/Reset the password of Grace Hopper/)).toBeInTheDocument();
    const [reset] = api.callsTo('POST', `/api/v1/users/${grace.id}/password-reset`);
    expect(reset.body).toEqual({ initial_password: 'harbor lantern quartz 77' });
    expect(reset.headers.get('X-CSRF-Token')).toBe('csrf-admin');
  });

  it('shows why the server refused a new password and lets it be changed', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/users': json(200, { items: [grace], next_cursor: null }),
      'POST /api/v1/auth/password-check': json(200, verdict),
      [`POST /api/v1/users/${grace.id}/password-reset`]: apiError(
        400,
        'weak_password',
        'This password is too easy to guess.',
      ),
    });
    renderApp('/admin/users');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Reset password' }));
    const dialog = await screen.findByRole('dialog', { name: 'Reset password' });
    await user.type(within(dialog).getByLabelText('New initial password'), 'password1234');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    await user.click(within(dialog).getByRole('button', { name: 'Reset password' }));

    expect(await within(dialog).findByRole('alert')).toHaveTextContent('This password is too easy to guess.');
    expect(within(dialog).getByLabelText('New initial password')).toHaveValue('password1234');
  });

  it('grants and revokes super admin after confirming, and shows a refusal', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/users': json(200, { items: [grace, admiral], next_cursor: null }),
      [`PUT /api/v1/users/${grace.id}/super-admin`]: json(204, null),
      [`DELETE /api/v1/users/${admiral.id}/super-admin`]: apiError(
        409,
        'last_super_admin',
        'GShare needs at least one super admin.',
      ),
    });
    renderApp('/admin/users');
    const user = userEvent.setup();

    const graceRow = (await screen.findByRole('cell', { name: 'Grace Hopper' })).closest('tr') as HTMLElement;
    await user.click(within(graceRow).getByRole('button', { name: 'Grant super admin' }));
    const grant = await screen.findByRole('dialog', { name: 'Grant super admin' });
    await user.click(within(grant).getByRole('button', { name: 'Grant' }));
    await waitFor(() => expect(api.callsTo('PUT', `/api/v1/users/${grace.id}/super-admin`)).toHaveLength(1));

    const anitaRow = screen.getByRole('cell', { name: 'Anita Borg' }).closest('tr') as HTMLElement;
    await user.click(within(anitaRow).getByRole('button', { name: 'Revoke super admin' }));
    const revoke = await screen.findByRole('dialog', { name: 'Revoke super admin' });
    await user.click(within(revoke).getByRole('button', { name: 'Revoke' }));
    expect(await within(revoke).findByRole('alert')).toHaveTextContent('GShare needs at least one super admin.');
  });

  it('offers a group admin password resets but not super admin, and nothing on super admins', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [groupAdmin])),
      'GET /api/v1/users': json(200, { items: [grace, admiral], next_cursor: null }),
    });
    renderApp('/admin/users');

    const graceRow = (await screen.findByRole('cell', { name: 'Grace Hopper' })).closest('tr') as HTMLElement;
    expect(within(graceRow).getByRole('button', { name: 'Reset password' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /super admin/ })).not.toBeInTheDocument();
    const anitaRow = screen.getByRole('cell', { name: 'Anita Borg' }).closest('tr') as HTMLElement;
    expect(within(anitaRow).queryByRole('button')).not.toBeInTheDocument();
  });

  it('offers no account actions on your own row', async () => {
    const me = makeMe({}, [SUPER_ADMIN]);
    stubFetch({
      'GET /api/v1/me': json(200, me),
      'GET /api/v1/users': json(200, { items: [me.user], next_cursor: null }),
    });
    renderApp('/admin/users');

    const ownRow = (await screen.findByRole('cell', { name: me.user.email })).closest('tr') as HTMLElement;
    expect(within(ownRow).queryByRole('button')).not.toBeInTheDocument();
  });
});
