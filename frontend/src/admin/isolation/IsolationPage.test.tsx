import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { ClusterOut, DedicationOut, NodeOut } from '../../api/types';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { renderApp } from '../../test/render';

const CLUSTER = '00000000-0000-4000-8000-0000000000c1';
const ORG = '00000000-0000-4000-8000-0000000000a1';
const GROUP = '00000000-0000-4000-8000-0000000000b1';

const cluster: ClusterOut = {
  id: CLUSTER,
  name: 'lab-east',
  api_server: 'https://10.0.0.1:6443',
  sessions_domain: 'sessions.lab.example',
  sandbox_runtime_class: null,
  user_namespaces: false,
  status: 'connected',
  status_message: '',
  last_contact_at: '2026-11-30T11:58:00Z',
  nodes: 2,
  cards: 4,
  healthy_cards: 4,
  missing_cards: 0,
  created_at: '2026-11-01T00:00:00Z',
};

const dedication: DedicationOut = {
  id: '00000000-0000-4000-8000-0000000000d1',
  cluster_id: CLUSTER,
  node: 'gpu-1',
  organization_id: ORG,
  group_id: null,
  tenant_name: 'Hospital',
  label: ORG,
  created_at: '2026-12-01T00:00:00Z',
};

function node(name: string, overrides: Partial<NodeOut> = {}): NodeOut {
  return {
    cluster_id: CLUSTER,
    node: name,
    cards: 2,
    usable_cards: 2,
    user_namespaces: false,
    runtime_classes: [],
    dedicated_label: null,
    dedicated_tainted: false,
    reported_at: '2026-12-01T00:00:00Z',
    dedication: null,
    ready: true,
    ...overrides,
  };
}

const routes = {
  'GET /api/v1/me': json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN])),
  'GET /api/v1/clusters': json(200, { items: [cluster], next_cursor: null }),
  'GET /api/v1/orgs': json(200, { items: [{ id: ORG, name: 'Hospital', created_at: '2026-01-01T00:00:00Z' }], next_cursor: null }),
  [`GET /api/v1/orgs/${ORG}/groups`]: json(200, {
    items: [{ id: GROUP, org_id: ORG, name: 'Radiology', created_at: '2026-01-01T00:00:00Z' }],
    next_cursor: null,
  }),
};

describe('isolation', () => {
  it('lists each node with what it offers, whose it is and what it still needs', async () => {
    stubFetch({
      ...routes,
      'GET /api/v1/isolation/nodes': json(200, {
        items: [
          node('gpu-0', { user_namespaces: true, runtime_classes: ['gvisor'] }),
          node('gpu-1', { dedication, ready: false }),
        ],
      }),
    });
    renderApp('/admin/isolation');
    const table = await screen.findByRole('table', { name: 'Nodes' });
    const shared = within(table).getByText('gpu-0').closest('tr')!;
    expect(within(shared).getByText('gvisor')).toBeInTheDocument();
    expect(within(shared).getByText('Everyone')).toBeInTheDocument();
    const private_ = within(table).getByText('gpu-1').closest('tr')!;
    expect(within(private_).getByText('Hospital')).toBeInTheDocument();
    expect(within(private_).getByText('Not ready')).toBeInTheDocument();
    expect(within(private_).getByText(new RegExp(`label gshare.io/dedicated=${ORG}`))).toBeInTheDocument();
    expect(within(private_).getByRole('button', { name: 'Give back' })).toBeInTheDocument();
  });

  it('dedicates a node to a group and shows why the server refused', async () => {
    let refuse = true;
    const api = stubFetch({
      ...routes,
      'GET /api/v1/isolation/nodes': json(200, { items: [node('gpu-0')] }),
      'POST /api/v1/isolation/dedications': () =>
        refuse
          ? apiError(409, 'node_in_use', 'Sessions run on the node as it is now (1 group(s) holding cards, 0 session(s) without a card); drain the node first.')
          : json(201, { ...dedication, node: 'gpu-0', group_id: GROUP, organization_id: null }),
    });
    renderApp('/admin/isolation');
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Dedicate' }));
    const dialog = await screen.findByRole('dialog', { name: 'Dedicate gpu-0' });
    await user.click(within(dialog).getByRole('button', { name: 'Dedicate' }));
    expect(await within(dialog).findByText('Choose an organization.')).toBeInTheDocument();
    expect(api.callsTo('POST', '/api/v1/isolation/dedications')).toHaveLength(0);

    await user.click(within(dialog).getByRole('combobox', { name: 'Organization' }));
    await user.click(await screen.findByRole('option', { name: 'Hospital', hidden: true }));
    await user.click(within(dialog).getByRole('combobox', { name: /Group/ }));
    await user.click(await screen.findByRole('option', { name: 'Radiology', hidden: true }));
    await user.click(within(dialog).getByRole('button', { name: 'Dedicate' }));
    expect(await within(dialog).findByText(/drain the node first/)).toBeInTheDocument();
    const [sent] = api.callsTo('POST', '/api/v1/isolation/dedications');
    expect(sent.body).toEqual({ cluster_id: CLUSTER, node: 'gpu-0', group_id: GROUP });
    expect(sent.headers.get('X-CSRF-Token')).toBe('csrf-admin');

    refuse = false;
    await user.click(within(dialog).getByRole('button', { name: 'Dedicate' }));
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Dedicate gpu-0' })).not.toBeInTheDocument());
  });

  it("names a cluster's sandbox RuntimeClass and refuses one Kubernetes would not", async () => {
    const api = stubFetch({
      ...routes,
      'GET /api/v1/isolation/nodes': json(200, { items: [] }),
      [`PUT /api/v1/clusters/${CLUSTER}/isolation`]: json(200, { ...cluster, sandbox_runtime_class: 'gvisor' }),
    });
    renderApp('/admin/isolation');
    const user = userEvent.setup();
    expect(await screen.findByText('No node reports cards yet.')).toBeInTheDocument();
    const row = (await screen.findByRole('table', { name: "Clusters' isolation" })).querySelector('tbody tr')!;
    await user.click(within(row as HTMLElement).getByRole('button', { name: 'Change' }));
    const dialog = await screen.findByRole('dialog', { name: 'Isolation on lab-east' });
    const field = within(dialog).getByRole('textbox', { name: /Sandbox RuntimeClass/ });
    await user.type(field, 'GVisor');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText(/A RuntimeClass name/)).toBeInTheDocument();
    expect(api.callsTo('PUT', `/api/v1/clusters/${CLUSTER}/isolation`)).toHaveLength(0);
    await user.clear(field);
    await user.type(field, 'gvisor');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(api.callsTo('PUT', `/api/v1/clusters/${CLUSTER}/isolation`)).toHaveLength(1));
    expect(api.callsTo('PUT', `/api/v1/clusters/${CLUSTER}/isolation`)[0].body).toEqual({
      sandbox_runtime_class: 'gvisor',
      user_namespaces: false,
    });
  });
});
