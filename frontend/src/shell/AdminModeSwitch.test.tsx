import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { RoleGrantOut } from '../api/types';
import { emptyPage, makeMe, SUPER_ADMIN } from '../test/fixtures';
import { json, stubFetch } from '../test/fetchStub';
import { renderApp } from '../test/render';

const GROUP_ADMIN: RoleGrantOut = {
  role: 'group_admin',
  org_id: '00000000-0000-4000-8000-0000000000b1',
  group_id: '00000000-0000-4000-8000-0000000000a1',
  org_name: 'Research',
  group_name: 'Vision lab',
};

describe('admin mode switch', () => {
  it('is hidden from users without an admin role', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    renderApp('/');

    expect(await screen.findByRole('heading', { name: /Welcome/ })).toBeInTheDocument();
    expect(screen.queryByRole('switch', { name: 'Admin mode' })).not.toBeInTheDocument();
    expect(screen.queryByRole('link', { name: 'Users' })).not.toBeInTheDocument();
  });

  it('is shown to admins, opens the admin console and is remembered', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/orgs': json(200, emptyPage),
    });
    renderApp('/');
    const user = userEvent.setup();

    const toggle = await screen.findByRole('switch', { name: 'Admin mode' });
    expect(toggle).not.toBeChecked();
    await user.click(toggle);

    expect(await screen.findByRole('heading', { name: 'Organizations' })).toBeInTheDocument();
    expect(screen.getByRole('switch', { name: 'Admin mode' })).toBeChecked();
    for (const name of ['Organizations', 'Groups', 'Users', 'Credits', 'Clusters', 'Audit log']) {
      expect(screen.getByRole('link', { name })).toBeInTheDocument();
    }
    expect(window.localStorage.getItem('gshare.adminMode.00000000-0000-4000-8000-000000000001')).toBe('true');
  });

  it('is shown to group admins too, and hides organization creation from them', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [GROUP_ADMIN])),
      'GET /api/v1/orgs': json(200, emptyPage),
    });
    renderApp('/admin/orgs');

    expect(await screen.findByText('No organizations yet.')).toBeInTheDocument();
    expect(screen.getByRole('switch', { name: 'Admin mode' })).toBeChecked();
    expect(screen.queryByRole('button', { name: 'New organization' })).not.toBeInTheDocument();
  });

  it('keeps non-admins out of admin pages', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    renderApp('/admin/users');

    expect(await screen.findByRole('heading', { name: /Welcome/ })).toBeInTheDocument();
  });
});
