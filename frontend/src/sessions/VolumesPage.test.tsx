import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { makeMe } from '../test/fixtures';
import { renderApp } from '../test/render';
import { GROUP_ID, makeMembership, makeVolume } from './testData';

const member = json(200, makeMe({ memberships: [makeMembership()] }));

const volumes = {
  items: [
    makeVolume({ id: 'v-free', name: 'home-old', size_gib: 20 }),
    makeVolume({ id: 'v-busy', name: 'home-busy', used_by: [{ session_id: 's1', name: 'notebook', state: 'running' }] }),
    makeVolume({ id: 'v-data', kind: 'shared', name: 'datasets', size_gib: 500, access_mode: 'ReadOnlyMany', group_id: GROUP_ID }),
  ],
  home_total_gib: 30,
  storage_limit_gib: 100,
};

describe('volumes', () => {
  it('lists volumes with who uses them and deletes an unused home volume after asking', async () => {
    const api = stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/volumes': json(200, volumes),
      'DELETE /api/v1/volumes/v-free': apiError(409, 'volume_in_use', 'The volume is used by 1 session(s); stop them first.'),
    });
    renderApp('/volumes');
    const user = userEvent.setup();

    const table = await screen.findByRole('table', { name: 'Volumes' });
    expect(screen.getByText(/of 100 GiB allowed/)).toHaveTextContent('Home volumes: 30 GiB of 100 GiB allowed');
    const busy = within(table).getByText('home-busy').closest('tr')!;
    expect(within(busy).getByRole('link', { name: 'notebook' })).toHaveAttribute('href', '/sessions/s1');
    expect(within(busy).queryByRole('button', { name: 'Delete' })).not.toBeInTheDocument();
    const shared = within(table).getByText('datasets').closest('tr')!;
    expect(shared).toHaveTextContent('Shared · Optics');
    expect(shared).toHaveTextContent('Read-only');
    expect(within(shared).queryByRole('button', { name: 'Delete' })).not.toBeInTheDocument();

    const free = within(table).getByText('home-old').closest('tr')!;
    await user.click(within(free).getByRole('button', { name: 'Delete' }));
    const dialog = await screen.findByRole('dialog', { name: 'Delete volume' });
    expect(api.callsTo('DELETE', '/api/v1/volumes/v-free')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Delete volume' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/volumes/v-free')).toHaveLength(1));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('stop them first');
  });

  it('says when there are none', async () => {
    stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/volumes': json(200, { items: [], home_total_gib: 0, storage_limit_gib: null }),
    });
    renderApp('/volumes');
    expect(await screen.findByText(/You have no volumes yet/)).toBeInTheDocument();
  });
});
