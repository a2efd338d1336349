import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { ClusterOut, RoleGrantOut } from '../../api/types';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { emptyPage, makeCard, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { renderApp } from '../../test/render';

const ORG_ADMIN: RoleGrantOut = {
  role: 'org_admin',
  org_id: '00000000-0000-4000-8000-0000000000b1',
  group_id: null,
  org_name: 'Research',
  group_name: null,
};

const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));

const CLUSTER_ID = '00000000-0000-4000-8000-0000000000c1';

function makeCluster(overrides: Partial<ClusterOut> = {}): ClusterOut {
  return {
    id: CLUSTER_ID,
    name: 'lab-east',
    api_server: 'https://10.0.0.1:6443',
    sessions_domain: 'sessions.lab.example',
    sandbox_runtime_class: null,
    user_namespaces: false,
    status: 'connected',
    status_message: 'Reachable; the session resource is installed.',
    last_contact_at: '2026-11-30T11:58:00Z',
    nodes: 2,
    cards: 4,
    healthy_cards: 3,
    missing_cards: 1,
    created_at: '2026-11-01T00:00:00Z',
    ...overrides,
  };
}

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: https://10.0.0.1:6443
`;

describe('clusters list', () => {
  it('shows each cluster with its status and card counts', async () => {
    stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/clusters': json(200, {
        items: [
          makeCluster(),
          makeCluster({
            id: '00000000-0000-4000-8000-0000000000c2',
            name: 'lab-west',
            status: 'unreachable',
            status_message: 'Connection refused by 10.0.0.2:6443.',
            last_contact_at: null,
            nodes: 1,
            cards: 2,
            healthy_cards: 2,
            missing_cards: 0,
          }),
        ],
        next_cursor: null,
      }),
    });
    renderApp('/admin/clusters');

    const east = (await screen.findByRole('link', { name: 'lab-east' })).closest('tr')!;
    expect(within(east).getByText('Connected')).toBeInTheDocument();
    expect(within(east).getByText('3 / 4 healthy')).toBeInTheDocument();
    expect(within(east).getByText('1 missing')).toBeInTheDocument();
    expect(within(east).getByText('https://10.0.0.1:6443')).toBeInTheDocument();
    expect(within(east).getByRole('button', { name: 'Remove' })).toBeInTheDocument();

    const west = screen.getByRole('link', { name: 'lab-west' }).closest('tr')!;
    expect(within(west).getByText('Unreachable')).toBeInTheDocument();
    expect(within(west).getByText('Connection refused by 10.0.0.2:6443.')).toBeInTheDocument();
    expect(within(west).getByText('2 / 2 healthy')).toBeInTheDocument();
    expect(within(west).queryByText(/missing/)).not.toBeInTheDocument();
    expect(within(west).getByText('never')).toBeInTheDocument();
  });

  it('registers a cluster with the CSRF token and shows why the server refused', async () => {
    let refuse = true;
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/clusters': json(200, emptyPage),
      'POST /api/v1/clusters': () =>
        refuse
          ? apiError(422, 'crd_missing', 'The GShareSession resource definition is not installed on this cluster.')
          : json(201, makeCluster({ cards: 0, healthy_cards: 0, missing_cards: 0 })),
    });
    renderApp('/admin/clusters');
    const user = userEvent.setup();

    expect(await screen.findByText('No clusters registered yet.')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Register cluster' }));
    const dialog = await screen.findByRole('dialog', { name: 'Register cluster' });
    await user.type(within(dialog).getByLabelText('Name'), 'lab-east');
    await user.click(within(dialog).getByLabelText('Kubeconfig'));
    await user.paste(KUBECONFIG);
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));

    const alert = await within(dialog).findByRole('alert');
    expect(alert).toHaveTextContent('The cluster is not ready for GShare');
    expect(alert).toHaveTextContent('The GShareSession resource definition is not installed on this cluster.');
    const [sent] = api.callsTo('POST', '/api/v1/clusters');
    expect(sent.body).toEqual({ name: 'lab-east', kubeconfig: KUBECONFIG, sessions_domain: 'sessions.gshare.local' });
    expect(sent.headers.get('X-CSRF-Token')).toBe('csrf-admin');

    refuse = false;
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));
    expect(await screen.findByText(/Registered lab-east/)).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Register cluster' })).not.toBeInTheDocument());
  });

  it('shows a name the control plane keeps for its own cluster under the name field', async () => {
    stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/clusters': json(200, emptyPage),
      'POST /api/v1/clusters': () =>
        apiError(409, 'local_cluster_kept', "'local' is the name of the cluster the control plane runs in, which it registers itself; choose another name."),
    });
    renderApp('/admin/clusters');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Register cluster' }));
    const dialog = await screen.findByRole('dialog', { name: 'Register cluster' });
    await user.type(within(dialog).getByLabelText('Name'), 'local');
    await user.click(within(dialog).getByLabelText('Kubeconfig'));
    await user.paste(KUBECONFIG);
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));

    expect(await within(dialog).findByText(/choose another name/)).toBeInTheDocument();
    expect(within(dialog).getByLabelText('Name')).toHaveAttribute('aria-invalid', 'true');
    expect(within(dialog).getByLabelText('Name')).toHaveValue('local');
  });

  it('checks the name before sending and fills the kubeconfig from a file', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/clusters': json(200, emptyPage),
    });
    renderApp('/admin/clusters');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Register cluster' }));
    const dialog = await screen.findByRole('dialog', { name: 'Register cluster' });
    await user.type(within(dialog).getByLabelText('Name'), 'Lab East');
    await user.upload(within(dialog).getByLabelText('Kubeconfig file'), new File([KUBECONFIG], 'lab.yaml'));

    await waitFor(() => expect(within(dialog).getByLabelText('Kubeconfig')).toHaveValue(KUBECONFIG));
    expect(within(dialog).getByText('Filled from lab.yaml.')).toBeInTheDocument();
    const domain = within(dialog).getByLabelText('Sessions domain');
    await user.clear(domain);
    await user.type(domain, 'https://sessions.example/');
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));

    expect(await within(dialog).findByText(/Use lowercase letters, digits and dashes/)).toBeInTheDocument();
    expect(within(dialog).getByText('Enter a domain name such as sessions.example.org.')).toBeInTheDocument();
    await user.clear(domain);
    await user.type(domain, 'sessions.example.org:70000');
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));
    expect(await within(dialog).findByText('The port must be between 1 and 65535.')).toBeInTheDocument();
    await user.clear(domain);
    await user.type(domain, 'sessions.example.org:8443');
    await user.click(within(dialog).getByRole('button', { name: 'Register' }));
    await waitFor(() => expect(within(dialog).queryByText(/The port must be/)).not.toBeInTheDocument());
    expect(within(dialog).queryByText('Enter a domain name such as sessions.example.org.')).not.toBeInTheDocument();
    expect(api.callsTo('POST', '/api/v1/clusters')).toHaveLength(0);
  });

  it('asks before removing a cluster', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/clusters': json(200, { items: [makeCluster()], next_cursor: null }),
      [`DELETE /api/v1/clusters/${CLUSTER_ID}`]: apiError(
        409,
        'cluster_has_live_sessions',
        'The cluster still runs 2 session(s); stop them before removing it.',
      ),
    });
    renderApp('/admin/clusters');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Remove' }));
    const dialog = await screen.findByRole('dialog', { name: 'Remove cluster' });
    expect(dialog).toHaveTextContent(/deletes its kubeconfig within minutes/);
    expect(dialog).toHaveTextContent(/Stop every session/);
    expect(api.calls.filter((c) => c.method === 'DELETE')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Remove cluster' }));

    expect(
      await within(dialog).findByText('The cluster still runs 2 session(s); stop them before removing it.'),
    ).toBeInTheDocument();
    expect(api.calls.filter((c) => c.method === 'DELETE')[0].headers.get('X-CSRF-Token')).toBe('csrf-admin');
  });
});

describe('clusters navigation', () => {
  it('shows the Clusters link to the super admin', async () => {
    stubFetch({ 'GET /api/v1/me': superAdmin, 'GET /api/v1/orgs': json(200, emptyPage) });
    renderApp('/admin/orgs');

    expect(await screen.findByText('No organizations yet.')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Clusters' })).toHaveAttribute('href', '/admin/clusters');
  });

  it('hides the Clusters link and page from an org admin', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [ORG_ADMIN])),
      'GET /api/v1/orgs': json(200, emptyPage),
    });
    renderApp('/admin/clusters');

    expect(await screen.findByText('No organizations yet.')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Organizations' })).toBeInTheDocument();
    expect(screen.queryByRole('link', { name: 'Clusters' })).not.toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/clusters')).toHaveLength(0);
  });
});

describe('cluster detail', () => {
  const cards = {
    items: [
      makeCard({ id: 'c-b-1', uuid: 'GPU-b-1', node: 'node-b', healthy: false }),
      makeCard({ id: 'c-a-1', uuid: 'GPU-a-1', node: 'node-a' }),
      makeCard({ id: 'c-a-2', uuid: 'GPU-a-2', node: 'node-a', missing: true, last_seen_at: '2026-11-28T09:00:00Z' }),
      makeCard({ id: 'c-a-3', uuid: 'GPU-a-3', node: 'node-a', memory_mib: 40960 }),
    ],
  };

  it('draws the cards per node from the cards route and marks the missing one', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      [`GET /api/v1/clusters/${CLUSTER_ID}`]: json(200, makeCluster()),
      [`GET /api/v1/clusters/${CLUSTER_ID}/cards`]: json(200, cards),
      'GET /api/v1/drains': json(200, { items: [] }),
    });
    renderApp(`/admin/clusters/${CLUSTER_ID}`);

    expect(await screen.findByRole('heading', { name: 'lab-east' })).toBeInTheDocument();
    expect(screen.getByRole('group', { name: 'Cards' })).toHaveTextContent('3 / 4 healthy');

    const nodeA = await screen.findByRole('region', { name: 'node-a' });
    const nodeB = screen.getByRole('region', { name: 'node-b' });
    expect(nodeA.compareDocumentPosition(nodeB) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(within(nodeA).getAllByRole('group', { name: /^Card / })).toHaveLength(3);

    const missing = within(nodeA).getByRole('group', { name: 'Card GPU-a-2' });
    expect(within(missing).getByText('Missing')).toBeInTheDocument();
    const healthy = within(nodeA).getByRole('group', { name: 'Card GPU-a-1' });
    expect(within(healthy).getByText('Healthy')).toBeInTheDocument();
    expect(within(healthy).getByText(/79\.6 GiB/)).toBeInTheDocument();
    expect(within(nodeA).getByText(/^40 GiB/)).toBeInTheDocument();
    const unhealthy = within(nodeB).getByRole('group', { name: 'Card GPU-b-1' });
    expect(within(unhealthy).getByText('Unhealthy')).toBeInTheDocument();
    expect(api.callsTo('GET', `/api/v1/clusters/${CLUSTER_ID}/cards`)).toHaveLength(1);
  });

  it('opens from the cluster name in the list', async () => {
    stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/clusters': json(200, { items: [makeCluster()], next_cursor: null }),
      [`GET /api/v1/clusters/${CLUSTER_ID}`]: json(200, makeCluster()),
      [`GET /api/v1/clusters/${CLUSTER_ID}/cards`]: json(200, cards),
      'GET /api/v1/drains': json(200, { items: [] }),
    });
    renderApp('/admin/clusters');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('link', { name: 'lab-east' }));

    expect(await screen.findByRole('heading', { name: 'lab-east' })).toBeInTheDocument();
    expect(await screen.findByRole('region', { name: 'node-b' })).toBeInTheDocument();
  });
});
