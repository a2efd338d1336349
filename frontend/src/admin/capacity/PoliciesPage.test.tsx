import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { PolicyOut, UserOut } from '../../api/types';
import { json, stubFetch } from '../../test/fetchStub';
import { emptyPage, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { renderApp } from '../../test/render';
import { formatPolicyValue } from './policyKeys';

const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));

const globalPolicy: PolicyOut = {
  scope: 'global',
  scope_id: null,
  updated_at: '2026-11-29T10:00:00Z',
  values: { max_gpu_sessions: 2, allowed_tiers: ['1/4'] },
};

const tiers = {
  items: [
    {
      id: 't1',
      model_id: 'm1',
      model: 'A100-80GB',
      name: '1/4',
      kind: 'fraction',
      denominator: 4,
      mig_profile: null,
      vram_mib: 20480,
      compute_percent: 25,
      price_per_hour: '1',
      price_is_default: true,
      retired_at: null,
    },
  ],
};

const grace: UserOut = {
  id: '00000000-0000-4000-8000-000000000002',
  email: 'grace@example.org',
  name: 'Grace Hopper',
  active: true,
  must_change_password: false,
  is_super_admin: false,
  created_at: '2025-01-01T00:00:00Z',
};

const base = {
  'GET /api/v1/me': superAdmin,
  'GET /api/v1/tiers': json(200, tiers),
  'GET /api/v1/orgs': json(200, emptyPage),
  'GET /api/v1/users': json(200, { items: [grace], next_cursor: null }),
};

describe('policy keys', () => {
  it('read as text', () => {
    expect(formatPolicyValue('allowed_models', [])).toBe('none');
    expect(formatPolicyValue('storage_gb', 20)).toBe('20 GB');
  });
});

describe('policies', () => {
  it('edits the global policy: keeps what it sets, adds and drops keys, saves', async () => {
    const api = stubFetch({
      ...base,
      'GET /api/v1/policies/global': json(200, globalPolicy),
      'PUT /api/v1/policies/global': ({ body }) =>
        json(200, { ...globalPolicy, values: (body as { values: Record<string, unknown> }).values }),
    });
    renderApp('/admin/policies');
    const user = userEvent.setup();

    const sessions = await screen.findByLabelText('GPU sessions at once');
    expect(sessions).toHaveValue('2');
    expect(screen.getByLabelText('Set Allowed GPU models here')).not.toBeChecked();
    expect(screen.getByLabelText('Set Organization weight here')).not.toBeChecked();
    expect(screen.getByLabelText('Set Allowed tiers here')).toBeChecked();

    await user.clear(sessions);
    await user.type(sessions, '3');
    await user.click(screen.getByLabelText('Set Queueing allowed here'));
    await user.click(screen.getByLabelText('Queueing allowed'));
    await user.click(screen.getByLabelText('Set Allowed tiers here'));
    await user.click(screen.getByLabelText('Set Allowed GPU models here'));
    await user.type(screen.getByLabelText('Allowed GPU models'), 'A100-80GB{Enter}');
    await user.click(screen.getByRole('button', { name: 'Save policy' }));

    await waitFor(() => expect(api.callsTo('PUT', '/api/v1/policies/global')).toHaveLength(1));
    const [sent] = api.callsTo('PUT', '/api/v1/policies/global');
    expect(sent.body).toEqual({ values: { max_gpu_sessions: 3, queueing_allowed: false, allowed_models: ['A100-80GB'] } });
    expect(sent.headers.get('X-CSRF-Token')).toBe('csrf-admin');
    expect(await screen.findByText('Saved the global policy.')).toBeInTheDocument();
  });

  it('asks before clearing a policy', async () => {
    const api = stubFetch({
      ...base,
      'GET /api/v1/policies/global': json(200, globalPolicy),
      'DELETE /api/v1/policies/global': json(204, null),
    });
    renderApp('/admin/policies');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Clear policy' }));
    const dialog = await screen.findByRole('dialog', { name: 'Clear policy' });
    expect(api.callsTo('DELETE', '/api/v1/policies/global')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Clear policy' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/policies/global')).toHaveLength(1));
  });

  it("shows a user's effective policy and the scope each value came from", async () => {
    const api = stubFetch({
      ...base,
      'GET /api/v1/policies/global': json(200, globalPolicy),
      [`GET /api/v1/users/${grace.id}/effective-policy`]: json(200, {
        user_id: grace.id,
        group_id: '00000000-0000-4000-8000-0000000000b2',
        values: [
          { key: 'allowed_tiers', value: ['1/4'], scope: 'global', scope_id: null },
          { key: 'max_gpu_sessions', value: 4, scope: 'group', scope_id: '00000000-0000-4000-8000-0000000000b2' },
          { key: 'storage_gb', value: null, scope: null, scope_id: null },
        ],
      }),
    });
    renderApp('/admin/policies');
    const user = userEvent.setup();

    const section = await screen.findByRole('region', { name: 'Effective policy' });
    expect(within(section).getByText('Choose a user to see the policy that applies to them.')).toBeInTheDocument();
    await user.click(within(section).getByLabelText('User'));
    await user.click(await screen.findByRole('option', { name: 'Grace Hopper <grace@example.org>', hidden: true }));

    const table = await within(section).findByRole('table', { name: 'Effective policy' });
    const sessions = within(table).getByText('GPU sessions at once').closest('tr')!;
    expect(sessions).toHaveTextContent('4');
    expect(within(sessions).getByText('Group')).toBeInTheDocument();
    const tiersRow = within(table).getByText('Allowed tiers').closest('tr')!;
    expect(within(tiersRow).getByText('Global')).toBeInTheDocument();
    const storage = within(table).getByText('Storage').closest('tr')!;
    expect(storage).toHaveTextContent('not set');
    expect(within(storage).getByText('unset')).toBeInTheDocument();
    expect(api.callsTo('GET', `/api/v1/users/${grace.id}/effective-policy`)).toHaveLength(1);
  });

  it('shows the policy read-only to an admin who may not set it', async () => {
    const me = makeMe({}, [SUPER_ADMIN]);
    me.capabilities = { actions: ['admin_mode', 'policy.read_global'], orgs: [], groups: [] };
    stubFetch({ ...base, 'GET /api/v1/me': json(200, me), 'GET /api/v1/policies/global': json(200, globalPolicy) });
    renderApp('/admin/policies');

    expect(await screen.findByLabelText('GPU sessions at once')).toBeDisabled();
    expect(screen.queryByRole('button', { name: 'Save policy' })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Clear policy' })).not.toBeInTheDocument();
  });

  it("lets an org admin set a group's policy, and only read the global one", async () => {
    const orgId = '00000000-0000-4000-8000-0000000000b1';
    const groupId = '00000000-0000-4000-8000-0000000000b2';
    const orgAdmin = makeMe({ csrf_token: 'csrf-org' }, [
      { role: 'org_admin', org_id: orgId, group_id: null, org_name: 'Research', group_name: null },
    ]);
    const api = stubFetch({
      ...base,
      'GET /api/v1/me': json(200, orgAdmin),
      'GET /api/v1/orgs': json(200, {
        items: [{ id: orgId, name: 'Research', created_at: '2025-01-01T00:00:00Z' }],
        next_cursor: null,
      }),
      [`GET /api/v1/orgs/${orgId}/groups`]: json(200, {
        items: [{ id: groupId, org_id: orgId, name: 'Vision', created_at: '2025-01-01T00:00:00Z' }],
        next_cursor: null,
      }),
      'GET /api/v1/policies/global': json(200, globalPolicy),
      [`GET /api/v1/policies/groups/${groupId}`]: json(200, {
        scope: 'group',
        scope_id: groupId,
        updated_at: null,
        values: {},
      }),
      [`PUT /api/v1/policies/groups/${groupId}`]: ({ body }) =>
        json(200, { scope: 'group', scope_id: groupId, updated_at: '2026-11-30T12:00:00Z', ...(body as object) }),
    });
    renderApp('/admin/policies');
    const user = userEvent.setup();

    expect(await screen.findByLabelText('GPU sessions at once')).toBeDisabled();
    expect(screen.queryByRole('button', { name: 'Save policy' })).not.toBeInTheDocument();

    const scoped = screen.getByRole('region', { name: 'Policy by scope' });
    await user.click(within(scoped).getByRole('radio', { name: 'Group' }));
    const picker = await waitFor(() => {
      const input = within(scoped)
        .getAllByLabelText('Group')
        .find((element) => element.getAttribute('type') !== 'radio');
      expect(input).toBeDefined();
      return input!;
    });
    await user.click(picker);
    await user.click(await screen.findByRole('option', { name: 'Research / Vision', hidden: true }));
    expect(await screen.findByText(/This scope sets no keys yet/)).toBeInTheDocument();
    // Priority, preemption, bookings and the trust boundary decide between tenants: a super
    // admin's keys, read-only here.
    expect(screen.getByLabelText('Set Priority here')).toBeDisabled();
    expect(screen.getByLabelText('Set Preemption notice here')).toBeDisabled();
    expect(screen.getByLabelText('Set Booking horizon here')).toBeDisabled();
    expect(screen.getByLabelText('Set Isolation level here')).toBeDisabled();
    expect(screen.getByLabelText('Set Outbound network here')).toBeDisabled();
    expect(screen.getAllByText('Set by a super admin')).toHaveLength(10);
    // An organization's weight among organizations is set for an organization, never a group.
    expect(screen.queryByLabelText('Set Organization weight here')).not.toBeInTheDocument();
    await user.click(screen.getByLabelText('Set GPU sessions at once here'));
    await user.type(screen.getByLabelText('GPU sessions at once'), '1');
    await user.click(screen.getByRole('button', { name: 'Save policy' }));

    await waitFor(() => expect(api.callsTo('PUT', `/api/v1/policies/groups/${groupId}`)).toHaveLength(1));
    const [sent] = api.callsTo('PUT', `/api/v1/policies/groups/${groupId}`);
    expect(sent.body).toEqual({ values: { max_gpu_sessions: 1 } });
    expect(sent.headers.get('X-CSRF-Token')).toBe('csrf-org');
  });
});
