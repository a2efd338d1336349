import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { RoleGrantOut } from '../../api/types';
import { makeSession, makeVolume } from '../../sessions/testData';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { emptyPage, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { renderApp } from '../../test/render';

const ORG_ID = '00000000-0000-4000-8000-0000000000b1';
const GROUP_ID = '00000000-0000-4000-8000-0000000000a1';
const GROUP_ADMIN: RoleGrantOut = {
  role: 'group_admin',
  org_id: ORG_ID,
  group_id: GROUP_ID,
  org_name: 'Research',
  group_name: 'Optics',
};
const groupAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [GROUP_ADMIN]));
const VOLUMES = `/api/v1/groups/${GROUP_ID}/volumes`;

describe('admin sessions', () => {
  it('lists the sessions in scope and filters them by state and group', async () => {
    const api = stubFetch({
      'GET /api/v1/me': groupAdmin,
      'GET /api/v1/orgs': json(200, emptyPage),
      'GET /api/v1/sessions': json(200, {
        items: [makeSession(), makeSession({ id: 's2', name: 'training', state: 'failed', state_reason: 'Image pull failed.' })],
      }),
    });
    renderApp('/admin/sessions');
    const user = userEvent.setup();

    const table = await screen.findByRole('table', { name: 'Sessions' });
    const failed = within(table).getByText('training').closest('tr')!;
    expect(within(failed).getByText('Failed')).toBeInTheDocument();
    expect(within(failed).getByText('Optics')).toBeInTheDocument();
    expect(failed).toHaveTextContent('A100-80GB 1/4 · 20 GiB');
    expect(within(table).queryByRole('button')).not.toBeInTheDocument();
    // The header's runway reads the caller's own sessions (scope mine); the page reads the admin scope.
    const adminCalls = () => api.callsTo('GET', '/api/v1/sessions').filter((call) => call.query.get('scope') === 'admin');
    expect(adminCalls()).not.toHaveLength(0);

    await user.click(screen.getByLabelText('State'));
    await user.click(await screen.findByRole('option', { name: 'Running', hidden: true }));
    await user.click(await screen.findByRole('option', { name: 'Failed', hidden: true }));
    await waitFor(() =>
      expect(adminCalls().at(-1)!.query.getAll('state')).toEqual(['running', 'failed']),
    );

    await user.click(screen.getByRole('combobox', { name: 'Group' }));
    await user.click(await screen.findByRole('option', { name: 'Optics', hidden: true }));
    await waitFor(() => expect(adminCalls().at(-1)!.query.get('group_id')).toBe(GROUP_ID));
  });

  it("creates a group's shared volume and refuses to delete one in use", async () => {
    const api = stubFetch({
      'GET /api/v1/me': groupAdmin,
      'GET /api/v1/orgs': json(200, emptyPage),
      [`GET ${VOLUMES}`]: json(200, {
        items: [
          makeVolume({
            id: 'v-data',
            kind: 'shared',
            name: 'datasets',
            size_gib: 500,
            access_mode: 'ReadOnlyMany',
            group_id: GROUP_ID,
            used_by: [{ session_id: 's1', name: 'notebook', state: 'running' }],
          }),
        ],
        home_total_gib: 0,
      }),
      [`POST ${VOLUMES}`]: json(201, makeVolume({ id: 'v-new', kind: 'shared', name: 'scratch', group_id: GROUP_ID })),
    });
    renderApp('/admin/sessions?tab=volumes');
    const user = userEvent.setup();

    const table = await screen.findByRole('table', { name: 'Shared volumes' });
    const row = within(table).getByText('datasets').closest('tr')!;
    expect(row).toHaveTextContent('Read-only');
    expect(within(row).getByText('notebook')).toBeInTheDocument();
    expect(within(row).getByRole('button', { name: 'Delete' })).toBeDisabled();

    await user.click(screen.getByRole('button', { name: 'New shared volume' }));
    const dialog = await screen.findByRole('dialog', { name: 'New shared volume for Optics' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Scratch Space');
    await user.click(within(dialog).getByRole('button', { name: 'Create volume' }));
    // Refused on the field, before anything is sent.
    expect(await within(dialog).findByText(/lower-case letters, digits and dashes, starting/)).toBeInTheDocument();
    expect(within(dialog).getByRole('textbox', { name: 'Name' })).toHaveAttribute('aria-invalid', 'true');
    expect(api.callsTo('POST', VOLUMES)).toHaveLength(0);

    await user.clear(within(dialog).getByRole('textbox', { name: 'Name' }));
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'scratch');
    const size = within(dialog).getByRole('textbox', { name: 'Size (GiB)' });
    await user.clear(size);
    await user.type(size, '200');
    await user.click(within(dialog).getByRole('radio', { name: 'Read-only' }));
    await user.click(within(dialog).getByRole('button', { name: 'Create volume' }));
    await waitFor(() => expect(api.callsTo('POST', VOLUMES)).toHaveLength(1));
    expect(api.callsTo('POST', VOLUMES)[0].body).toEqual({ name: 'scratch', size_gib: 200, access_mode: 'ReadOnlyMany' });
    await waitFor(() => expect(api.callsTo('GET', VOLUMES)).toHaveLength(2));
  });
});

describe('session catalog', () => {
  const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));
  const jupyter = {
    id: 'img1',
    session_type: 'jupyterlab',
    name: 'JupyterLab 4',
    reference: 'registry.example.org/jupyter:4.1',
    description: '',
    enabled: true,
  };
  const legacy = { ...jupyter, id: 'img2', name: 'JupyterLab 3', reference: 'registry.example.org/jupyter:3', enabled: false };

  it('lists every image, adds one and disables one after asking', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/catalog': json(200, { items: [jupyter, legacy] }),
      'POST /api/v1/catalog': json(201, { ...jupyter, id: 'img3', session_type: 'terminal', name: 'Shell' }),
      'PATCH /api/v1/catalog/img1': json(200, { ...jupyter, enabled: false }),
      'PATCH /api/v1/catalog/img2': apiError(409, 'image_name_taken', 'An enabled image has this name.'),
    });
    renderApp('/admin/catalog');
    const user = userEvent.setup();

    const table = await screen.findByRole('table', { name: 'Catalog' });
    expect(api.callsTo('GET', '/api/v1/catalog')[0].query.get('include_disabled')).toBe('true');
    const oldRow = within(table).getByText('JupyterLab 3').closest('tr')!;
    expect(within(oldRow).getByText('Disabled')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Session catalog' })).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Add image' }));
    const dialog = await screen.findByRole('dialog', { name: 'Add image' });
    await user.click(within(dialog).getByRole('radio', { name: 'Terminal' }));
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Shell');
    await user.type(within(dialog).getByRole('textbox', { name: 'Image reference' }), 'registry.example.org/shell:1');
    await user.click(within(dialog).getByRole('button', { name: 'Add image' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/catalog')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/catalog')[0].body).toEqual({
      session_type: 'terminal',
      name: 'Shell',
      reference: 'registry.example.org/shell:1',
      description: '',
      enabled: true,
    });

    const current = within(table).getByText('JupyterLab 4').closest('tr')!;
    await user.click(within(current).getByRole('button', { name: 'Disable' }));
    const confirm = await screen.findByRole('dialog', { name: 'Disable image' });
    await user.click(within(confirm).getByRole('button', { name: 'Disable image' }));
    await waitFor(() => expect(api.callsTo('PATCH', '/api/v1/catalog/img1')).toHaveLength(1));
    expect(api.callsTo('PATCH', '/api/v1/catalog/img1')[0].body).toEqual({ enabled: false });

    await user.click(within(oldRow).getByRole('button', { name: 'Enable' }));
    expect(await within(oldRow).findByRole('alert')).toHaveTextContent('An enabled image has this name.');
  });

  it('is not offered to other admins', async () => {
    stubFetch({
      'GET /api/v1/me': groupAdmin,
      'GET /api/v1/orgs': json(200, emptyPage),
      'GET /api/v1/sessions': json(200, { items: [] }),
    });
    renderApp('/admin/catalog');
    const nav = await screen.findByRole('navigation', { name: 'Administration' });
    expect(within(nav).getByRole('link', { name: 'Sessions' })).toBeInTheDocument();
    expect(within(nav).queryByRole('link', { name: 'Session catalog' })).not.toBeInTheDocument();
    // Sent to the admin home instead.
    expect(await screen.findByRole('heading', { name: 'Organizations' })).toBeInTheDocument();
    expect(screen.queryByRole('heading', { name: 'Session catalog' })).not.toBeInTheDocument();
  });
});

describe('worker health', () => {
  it("shows each loop's lag and errors, and clusters whose metrics cannot be read", async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN])),
      'GET /api/v1/orgs': json(200, emptyPage),
      'GET /api/v1/worker/health': json(200, {
        loops: [
          {
            name: 'metering',
            interval_seconds: 60,
            last_run_at: '2026-11-30T10:00:00Z',
            last_ok_at: '2026-11-30T09:50:00Z',
            lag_seconds: 540,
            failures: 3,
            last_error: 'OperationalError: connection refused',
          },
        ],
        metrics_problems: [
          { cluster_id: 'c1', cluster_name: 'lab', at: '2026-11-30T10:00:00Z', error: 'HTTP 503' },
        ],
        orphans: [{ cluster_id: 'c1', cluster_name: 'lab', resources: ['session-stray'] }],
      }),
    });
    renderApp('/admin/worker');
    expect(await screen.findByRole('heading', { name: 'Worker health' })).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Worker health' })).toHaveAttribute('href', '/admin/worker');
    const table = await screen.findByRole('table', { name: 'Worker loops' });
    const row = within(table).getByText('metering').closest('tr')!;
    expect(row).toHaveTextContent('540 s');
    expect(row).toHaveTextContent('3 in a row');
    expect(row).toHaveTextContent('connection refused');
    expect(screen.getByText('GPU metrics of lab cannot be read')).toBeInTheDocument();
    expect(screen.getByText(/No session of this cluster stands for session-stray/)).toBeInTheDocument();
  });

  it('is not offered to group admins', async () => {
    stubFetch({
      'GET /api/v1/me': groupAdmin,
      'GET /api/v1/orgs': json(200, emptyPage),
      'GET /api/v1/sessions': json(200, { items: [] }),
    });
    renderApp('/admin/sessions');
    expect(await screen.findByRole('tab', { name: 'Sessions' })).toBeInTheDocument();
    expect(screen.queryByRole('link', { name: 'Worker health' })).not.toBeInTheDocument();
  });
});
