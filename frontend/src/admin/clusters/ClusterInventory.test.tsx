import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { ClusterOut, OccupantOut } from '../../api/types';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { makeCard, makeMe, SUPER_ADMIN, SUPER_ADMIN_ACTIONS } from '../../test/fixtures';
import { renderApp } from '../../test/render';
import { profileSlices } from './migSlices';

const CLUSTER_ID = '00000000-0000-4000-8000-0000000000c1';
const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));

const cluster: ClusterOut = {
  id: CLUSTER_ID,
  name: 'lab-east',
  api_server: 'https://10.0.0.1:6443',
  sessions_domain: 'sessions.lab.example',
  sandbox_runtime_class: null,
  user_namespaces: false,
  status: 'connected',
  status_message: 'Reachable.',
  last_contact_at: '2026-11-30T11:58:00Z',
  nodes: 1,
  cards: 3,
  healthy_cards: 3,
  missing_cards: 0,
  created_at: '2026-11-01T00:00:00Z',
};

function occupant(overrides: Partial<OccupantOut>): OccupantOut {
  return {
    request_id: '00000000-0000-4000-8000-0000000000a1',
    user_id: '00000000-0000-4000-8000-000000000002',
    user_email: 'grace@example.org',
    group_id: '00000000-0000-4000-8000-0000000000b2',
    tier: '1/4',
    slot: 0,
    mig_profile: null,
    vram_mib: 20389,
    status: 'live',
    admitted_at: '2026-11-30T11:00:00Z',
    ...overrides,
  };
}

const carved = makeCard({
  id: 'card-carved',
  uuid: 'GPU-carved',
  carved_tier: '1/4',
  carved_slots: 4,
  free_slots: 2,
  occupants: [occupant({ slot: 0 }), occupant({ slot: 2, user_email: 'alan@example.org', user_id: 'u3' })],
});
const whole = makeCard({ id: 'card-whole', uuid: 'GPU-whole' });
const migCard = makeCard({
  id: 'card-mig',
  uuid: 'GPU-mig',
  model: 'NVIDIA-A100-SXM4-80GB',
  pool: 'mig',
  mig_instances: [
    { profile: '3g.40gb', start: 0, occupied: true },
    { profile: '2g.20gb', start: 4, occupied: false },
    { profile: '1g.10gb', start: 6, occupied: false },
  ],
  occupants: [occupant({ slot: 0, mig_profile: '3g.40gb', tier: 'mig-3g.40gb' })],
});

function routes(extra: Record<string, Parameters<typeof stubFetch>[0][string]> = {}) {
  return {
    'GET /api/v1/me': superAdmin,
    [`GET /api/v1/clusters/${CLUSTER_ID}`]: json(200, cluster),
    [`GET /api/v1/clusters/${CLUSTER_ID}/cards`]: json(200, { items: [carved, whole, migCard] }),
    'GET /api/v1/drains': json(200, { items: [] }),
    ...extra,
  };
}

describe('MIG slice widths', () => {
  it('follow the memory each profile names on the card', () => {
    expect(profileSlices('1g.10gb', 81559)).toBe(1);
    expect(profileSlices('1g.20gb', 81559)).toBe(2);
    expect(profileSlices('3g.40gb', 81559)).toBe(4);
    expect(profileSlices('7g.80gb', 81559)).toBe(8);
    expect(profileSlices('1g.10gb', 40960)).toBe(2);
    expect(profileSlices('1g.18gb+me', 143771)).toBe(1);
    expect(profileSlices('3g.71gb', 143771)).toBe(4);
  });
});

describe('cluster inventory', () => {
  it('draws carved slots with their occupants, a whole free card, and MIG instances', async () => {
    renderAppWith(routes());

    const carvedTile = await screen.findByRole('group', { name: 'Card GPU-carved' });
    expect(within(carvedTile).getByLabelText('Slot 1: grace@example.org')).toHaveTextContent('grace@example.org');
    expect(within(carvedTile).getByLabelText('Slot 2: free')).toBeInTheDocument();
    expect(within(carvedTile).getByLabelText('Slot 3: alan@example.org')).toBeInTheDocument();
    expect(within(carvedTile).getByLabelText('Slot 4: free')).toBeInTheDocument();
    expect(carvedTile).toHaveTextContent('carved 1/4');
    expect(carvedTile).toHaveTextContent('2 free');

    const wholeTile = screen.getByRole('group', { name: 'Card GPU-whole' });
    expect(within(wholeTile).getByLabelText('Whole card: free')).toBeInTheDocument();

    const migTile = screen.getByRole('group', { name: 'Card GPU-mig' });
    const big = within(migTile).getByLabelText('3g.40gb at slice 0: grace@example.org');
    expect(big.style.gridColumn).toBe('1 / span 4');
    const free = within(migTile).getByLabelText('2g.20gb at slice 4: free');
    expect(free.style.gridColumn).toBe('5 / span 2');
    expect(within(migTile).getByLabelText('1g.10gb at slice 6: free').style.gridColumn).toBe('7 / span 1');
    expect(within(migTile).getByText('MIG')).toBeInTheDocument();
  });

  it('explains that a busy card cannot move pools', async () => {
    const api = stubFetch(
      routes({
        'PUT /api/v1/cards/card-carved/pool': apiError(
          409,
          'card_busy',
          '2 allocation(s) are on this card; it changes only while empty.',
        ),
      }),
    );
    renderApp(`/admin/clusters/${CLUSTER_ID}`);
    const user = userEvent.setup();

    const tile = await screen.findByRole('group', { name: 'Card GPU-carved' });
    await user.click(within(tile).getByRole('button', { name: 'Move to MIG pool' }));
    const dialog = await screen.findByRole('dialog', { name: 'Move card' });
    expect(api.callsTo('PUT', '/api/v1/cards/card-carved/pool')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Move card' }));

    const alert = await within(dialog).findByRole('alert');
    expect(alert).toHaveTextContent('The card is busy');
    expect(alert).toHaveTextContent('2 allocation(s) are on this card');
    const [sent] = api.callsTo('PUT', '/api/v1/cards/card-carved/pool');
    expect(sent.body).toEqual({ pool: 'mig' });
    expect(sent.headers.get('X-CSRF-Token')).toBe('csrf-admin');
  });

  it('sets a MIG layout chosen from the layouts the GPU accepts', async () => {
    const api = stubFetch(
      routes({
        'GET /api/v1/cards/card-mig/mig-layouts': json(200, {
          geometry: 'A100-80GB',
          profiles: ['1g.10gb', '2g.20gb', '3g.40gb', '7g.80gb'],
          layouts: [['7g.80gb'], ['3g.40gb', '3g.40gb']],
        }),
        'PUT /api/v1/cards/card-mig/mig-layout': json(200, migCard),
      }),
    );
    renderApp(`/admin/clusters/${CLUSTER_ID}`);
    const user = userEvent.setup();

    const tile = await screen.findByRole('group', { name: 'Card GPU-mig' });
    await user.click(within(tile).getByRole('button', { name: 'Set MIG layout' }));
    const dialog = await screen.findByRole('dialog', { name: 'Set MIG layout' });
    await user.click(await within(dialog).findByRole('radio', { name: '3g.40gb + 3g.40gb' }));
    await user.click(within(dialog).getByRole('button', { name: 'Apply layout' }));

    await waitFor(() => expect(api.callsTo('PUT', '/api/v1/cards/card-mig/mig-layout')).toHaveLength(1));
    expect(api.callsTo('PUT', '/api/v1/cards/card-mig/mig-layout')[0].body).toEqual({
      instances: [{ profile: '3g.40gb' }, { profile: '3g.40gb' }],
    });
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Set MIG layout' })).not.toBeInTheDocument());
  });

  it('hides the card controls from someone who may only read capacity', async () => {
    const readOnly = makeMe({}, [SUPER_ADMIN]);
    readOnly.capabilities = {
      actions: SUPER_ADMIN_ACTIONS.filter((a) => a !== 'capacity.manage'),
      orgs: [],
      groups: [],
    };
    stubFetch(routes({ 'GET /api/v1/me': json(200, readOnly) }));
    renderApp(`/admin/clusters/${CLUSTER_ID}`);

    const tile = await screen.findByRole('group', { name: 'Card GPU-mig' });
    expect(within(tile).getByLabelText('2g.20gb at slice 4: free')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Move to/ })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Set MIG layout' })).not.toBeInTheDocument();
  });

  it('shows why the cards could not be loaded', async () => {
    stubFetch(
      routes({ [`GET /api/v1/clusters/${CLUSTER_ID}/cards`]: apiError(500, 'internal', 'The inventory is unavailable.') }),
    );
    renderApp(`/admin/clusters/${CLUSTER_ID}`);

    expect(await screen.findByText('The inventory is unavailable.')).toBeInTheDocument();
    expect(screen.getByRole('heading', { name: 'lab-east' })).toBeInTheDocument();
  });
});

describe('a large cluster', () => {
  // 6 nodes of 8: node 1 has an unhealthy card, node 4 a draining one, node 5 a carved one.
  const fleet = Array.from({ length: 48 }, (_, i) =>
    makeCard({
      id: `card-${i}`,
      uuid: `GPU-${String(i).padStart(5, '0')}`,
      node: `gpu-node-${Math.floor(i / 8)}`,
      model: i < 40 ? 'NVIDIA H100 80GB HBM3' : 'NVIDIA-A100-SXM4-80GB',
      healthy: i !== 9,
      draining: i === 33,
      ...(i === 47 ? { carved_tier: '1/4', carved_slots: 4, free_slots: 3, occupants: [occupant({ slot: 0 })] } : {}),
    }),
  );
  const fleetRoutes = () => routes({ [`GET /api/v1/clusters/${CLUSTER_ID}/cards`]: json(200, { items: fleet }) });
  const tiles = () => screen.queryAllByRole('group', { name: /^Card GPU-/ });

  it('sums the cards per model and per node, and draws one page of them', async () => {
    stubFetch(fleetRoutes());
    renderApp(`/admin/clusters/${CLUSTER_ID}`);

    const models = await screen.findByRole('table', { name: 'Cards by GPU model' });
    const h100 = within(models).getByRole('button', { name: 'NVIDIA H100 80GB HBM3' }).closest('tr')!;
    expect([...h100.querySelectorAll('td')].map((td) => td.textContent)).toEqual([
      'NVIDIA H100 80GB HBM3',
      '40',
      '38',
      '0',
      '0',
      '1',
      '1',
      '0%',
    ]);
    const a100 = within(models).getByRole('button', { name: 'NVIDIA-A100-SXM4-80GB' }).closest('tr')!;
    expect(within(a100).getByText('1/4 ×1')).toBeInTheDocument();
    const totals = screen.getByRole('group', { name: 'All cards of the cluster' });
    expect(within(totals).getByRole('group', { name: 'Cards' })).toHaveTextContent('48');
    expect(within(totals).getByRole('group', { name: 'Unhealthy' })).toHaveTextContent('1');
    expect(within(totals).getByRole('group', { name: 'Allocated' })).toHaveTextContent('1%');

    const nodes = screen.getByRole('table', { name: 'Cards by node' });
    expect(within(nodes).getAllByRole('row')).toHaveLength(7);
    expect(tiles()).toHaveLength(32);
    expect(screen.getByText(/48 cards · showing 1–32/)).toBeInTheDocument();

    await userEvent.setup().click(screen.getByRole('button', { name: 'Page 2' }));
    expect(tiles()).toHaveLength(16);
    expect(screen.getByRole('group', { name: 'Card GPU-00047' })).toBeInTheDocument();
  });

  it('filters the picture by state, node and text, and starts from the filters in the address', async () => {
    stubFetch(fleetRoutes());
    renderApp(`/admin/clusters/${CLUSTER_ID}?q=node-1`);
    const user = userEvent.setup();

    expect(await screen.findByRole('textbox', { name: 'Search' })).toHaveValue('node-1');
    expect(tiles()).toHaveLength(8);
    expect(screen.getByText('8 of 48 cards match')).toBeInTheDocument();

    await user.click(screen.getByRole('radio', { name: 'Unhealthy' }));
    expect(tiles().map((tile) => tile.getAttribute('aria-label'))).toEqual(['Card GPU-00009']);

    await user.clear(screen.getByRole('textbox', { name: 'Search' }));
    await user.click(screen.getByRole('radio', { name: 'Draining' }));
    const drainingTile = screen.getByRole('group', { name: 'Card GPU-00033' });
    expect(within(drainingTile).getByText('Draining')).toBeInTheDocument();
    expect(tiles()).toHaveLength(1);

    await user.click(screen.getByRole('radio', { name: 'All' }));
    const nodes = screen.getByRole('table', { name: 'Cards by node' });
    await user.click(within(nodes).getByRole('button', { name: 'gpu-node-5' }));
    expect(screen.getByRole('region', { name: 'gpu-node-5' })).toBeInTheDocument();
    expect(tiles()).toHaveLength(8);

    await user.type(screen.getByRole('textbox', { name: 'Search' }), 'no-such-card');
    expect(screen.getByText('No cards match these filters.')).toBeInTheDocument();
  });

  it('reads an unknown state in the address as no state', async () => {
    stubFetch(fleetRoutes());
    renderApp(`/admin/clusters/${CLUSTER_ID}?state=exploded`);
    await screen.findByRole('table', { name: 'Cards by node' });
    expect(screen.getByRole('radio', { name: 'All' })).toBeChecked();
    expect(tiles()).toHaveLength(32);
  });
});

function renderAppWith(table: Parameters<typeof stubFetch>[0]) {
  stubFetch(table);
  return renderApp(`/admin/clusters/${CLUSTER_ID}`);
}
