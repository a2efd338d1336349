import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import dayjs from 'dayjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ClusterOut, OccupantOut } from '../../api/types';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { makeCard, makeMe, SUPER_ADMIN, SUPER_ADMIN_ACTIONS } from '../../test/fixtures';
import { renderApp } from '../../test/render';
import type { DrainOut } from './drains';

const CLUSTER_ID = '00000000-0000-4000-8000-0000000000c1';
const OTHER_CLUSTER = '00000000-0000-4000-8000-0000000000c2';
const PAGE = `/admin/clusters/${CLUSTER_ID}`;
const NOW = new Date('2026-11-30T12:00:19Z');
const clock = (iso: string) => dayjs(iso).format('HH:mm');
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
  nodes: 2,
  cards: 2,
  healthy_cards: 2,
  missing_cards: 0,
  created_at: '2026-11-01T00:00:00Z',
};

function occupant(overrides: Partial<OccupantOut> = {}): OccupantOut {
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
    notice_deadline: null,
    ...overrides,
  };
}

const healthyCard = makeCard({ id: 'card-a', uuid: 'GPU-aaaa', node: 'node-a' });
const brokenCard = makeCard({
  id: 'card-b',
  uuid: 'GPU-bbbb',
  node: 'node-b',
  carved_tier: '1/4',
  carved_slots: 4,
  free_slots: 3,
  drain: { id: 'd2', scope: 'card', source: 'xid', reason: 'XID 79: the GPU fell off the bus.', deadline: '2026-11-30T12:10:00Z' },
  occupants: [occupant({ notice_deadline: '2026-11-30T12:10:00Z' })],
});

function drain(overrides: Partial<DrainOut>): DrainOut {
  return {
    id: 'd1',
    scope: 'node',
    cluster_id: CLUSTER_ID,
    node: 'node-a',
    card_id: null,
    reason: 'Firmware update',
    source: 'admin',
    deadline: '2026-11-30T13:00:00Z',
    status: 'active',
    created_at: '2026-11-30T11:00:00Z',
    ended_at: null,
    cards: 2,
    sessions_left: 3,
    next_deadline: '2026-11-30T12:30:00Z',
    ...overrides,
  };
}

const nodeDrain = drain({});
const cardDrain = drain({
  id: 'd2',
  scope: 'card',
  node: null,
  card_id: 'card-b',
  source: 'xid',
  reason: 'XID 79: the GPU fell off the bus.',
  deadline: '2026-11-30T12:10:00Z',
  cards: 1,
  sessions_left: 0,
  next_deadline: null,
});
const elsewhere = drain({ id: 'd3', cluster_id: OTHER_CLUSTER, node: 'far-node' });

function routes(extra: Record<string, Parameters<typeof stubFetch>[0][string]> = {}) {
  return {
    'GET /api/v1/me': superAdmin,
    [`GET /api/v1/clusters/${CLUSTER_ID}`]: json(200, cluster),
    [`GET /api/v1/clusters/${CLUSTER_ID}/cards`]: json(200, { items: [healthyCard, brokenCard] }),
    'GET /api/v1/drains': json(200, { items: [nodeDrain, cardDrain, elsewhere] }),
    ...extra,
  };
}

const drainsTable = () => screen.findByRole('table', { name: 'Drains' });
const rowOf = (table: HTMLElement, text: string) => within(table).getByText(text).closest('tr')!;

describe('drains on the cluster page', () => {
  // Only the clock is frozen: timers run, so dialogs and countdowns behave as in a browser.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it("lists the cluster's active drains soonest first, with their progress", async () => {
    const api = stubFetch(routes());
    renderApp(PAGE);

    const table = await drainsTable();
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent('Card GPU-bbbb');
    expect(rows[0]).toHaveTextContent('hardware errorXID 79: the GPU fell off the bus.');
    expect(rows[0]).toHaveTextContent(`Sessions paused in 9:41 (at ${clock('2026-11-30T12:10:00Z')})`);
    expect(rows[0]).toHaveTextContent('1 card · 0 sessions leftNothing runs on it: ready for maintenance.');
    expect(rows[1]).toHaveTextContent('Node node-a');
    expect(rows[1]).toHaveTextContent('Firmware update');
    expect(rows[1]).toHaveTextContent(`Sessions paused in 59:41 (at ${clock('2026-11-30T13:00:00Z')})`);
    expect(rows[1]).toHaveTextContent(`2 cards · 3 sessions leftNext pause at ${clock('2026-11-30T12:30:00Z')}`);
    expect(within(table).queryByText('Node far-node')).not.toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/drains')[0].query.get('active')).toBe('true');
  });

  it('marks a drained card and the pause of each session on it', async () => {
    stubFetch(routes());
    renderApp(PAGE);

    const tile = await screen.findByRole('group', { name: 'Card GPU-bbbb' });
    expect(tile).toHaveTextContent(`Draining until ${clock('2026-11-30T12:10:00Z')}`);
    expect(within(tile).getByText('hardware error')).toBeInTheDocument();
    const slot = within(tile).getByLabelText(`Slot 1: grace@example.org, paused at ${clock('2026-11-30T12:10:00Z')}`);
    expect(slot).toHaveTextContent(`grace@example.org · paused at ${clock('2026-11-30T12:10:00Z')}`);
    const other = screen.getByRole('group', { name: 'Card GPU-aaaa' });
    expect(within(other).queryByText(/Draining/)).not.toBeInTheDocument();
  });

  it('ends a drain once asked, and calls one off once asked', async () => {
    const api = stubFetch(
      routes({
        'POST /api/v1/drains/d1/end': json(200, { ...nodeDrain, status: 'ended' }),
        'POST /api/v1/drains/d2/cancel': json(200, { ...cardDrain, status: 'cancelled' }),
      }),
    );
    renderApp(PAGE);
    const user = userEvent.setup();

    const table = await drainsTable();
    await user.click(within(rowOf(table, 'Node node-a')).getByRole('button', { name: 'End the drain of node node-a' }));
    const ending = await screen.findByRole('dialog', { name: 'End drain' });
    expect(ending).toHaveTextContent('Node node-a takes sessions again.');
    expect(api.callsTo('POST', '/api/v1/drains/d1/end')).toHaveLength(0);
    await user.click(within(ending).getByRole('button', { name: 'End drain' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/drains/d1/end')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/drains/d1/end')[0].headers.get('X-CSRF-Token')).toBe('csrf-admin');
    expect(await screen.findByText('The drain of node node-a has ended.')).toBeInTheDocument();
    // The list is asked for again: what it shows has changed.
    await waitFor(() => expect(api.callsTo('GET', '/api/v1/drains').length).toBeGreaterThan(1));

    await user.click(within(rowOf(table, 'Card GPU-bbbb')).getByRole('button', { name: 'Cancel the drain of card GPU-bbbb' }));
    const cancelling = await screen.findByRole('dialog', { name: 'Cancel drain' });
    await user.click(within(cancelling).getByRole('button', { name: 'Cancel drain' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/drains/d2/cancel')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/drains/d2/end')).toHaveLength(0);
    expect(api.callsTo('POST', '/api/v1/drains/d1/cancel')).toHaveLength(0);
  });

  it('shows in the dialog why a drain could not be ended', async () => {
    stubFetch(routes({ 'POST /api/v1/drains/d1/end': apiError(409, 'drain_not_active', 'The drain is cancelled already.') }));
    renderApp(PAGE);
    const user = userEvent.setup();

    const table = await drainsTable();
    await user.click(within(rowOf(table, 'Node node-a')).getByRole('button', { name: 'End the drain of node node-a' }));
    const dialog = await screen.findByRole('dialog', { name: 'End drain' });
    await user.click(within(dialog).getByRole('button', { name: 'End drain' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('The drain is cancelled already.');
  });

  it('drains one node until a deadline, checking the form first', async () => {
    const api = stubFetch(routes({ 'POST /api/v1/drains': json(201, drain({ id: 'd9', node: 'node-b' })) }));
    renderApp(PAGE);
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Drain…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Drain' });
    await user.click(within(dialog).getByRole('radio', { name: 'One node' }));
    await user.click(within(dialog).getByRole('button', { name: 'Start draining' }));
    await waitFor(() => expect(within(dialog).getByRole('combobox', { name: 'Node' })).toHaveAccessibleDescription('Choose a node.'));
    expect(within(dialog).getByRole('textbox', { name: 'Reason' })).toHaveAccessibleDescription(
      expect.stringContaining("Say why; the sessions' owners will read it."),
    );
    expect(api.callsTo('POST', '/api/v1/drains')).toHaveLength(0);

    await user.click(within(dialog).getByRole('combobox', { name: 'Node' }));
    await user.click(await screen.findByRole('option', { name: 'node-b', hidden: true }));
    await user.type(within(dialog).getByRole('textbox', { name: 'Reason' }), '  Firmware update  ');
    await user.click(within(dialog).getByRole('button', { name: 'Start draining' }));

    await waitFor(() => expect(api.callsTo('POST', '/api/v1/drains')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/drains')[0].body).toEqual({
      scope: 'node',
      cluster_id: CLUSTER_ID,
      node: 'node-b',
      card_id: null,
      deadline: dayjs(NOW).add(30, 'minute').startOf('minute').toISOString(),
      reason: 'Firmware update',
    });
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Drain' })).not.toBeInTheDocument());
  });

  it("puts the server's refusal on the field it concerns", async () => {
    const api = stubFetch(
      routes({
        'POST /api/v1/drains': apiError(422, 'invalid_deadline', "A drain's deadline is now or later."),
      }),
    );
    renderApp(PAGE);
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Drain…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Drain' });
    await user.click(within(dialog).getByRole('radio', { name: 'One card' }));
    await user.click(within(dialog).getByRole('combobox', { name: 'Card' }));
    await user.click(await screen.findByRole('option', { name: /GPU-bbbb/, hidden: true }));
    await user.type(within(dialog).getByRole('textbox', { name: 'Reason' }), 'Replace the card');
    await user.click(within(dialog).getByRole('button', { name: 'Start draining' }));

    const deadline = within(dialog).getByRole('button', { name: 'Deadline' });
    await waitFor(() => expect(deadline).toHaveAttribute('aria-invalid', 'true'));
    expect(deadline).toHaveAccessibleDescription(expect.stringContaining("A drain's deadline is now or later."));
    expect(api.callsTo('POST', '/api/v1/drains')[0].body).toMatchObject({ scope: 'card', card_id: 'card-b', node: null });
    expect(within(dialog).queryByRole('alert')).not.toBeInTheDocument();
  });

  it('says when nothing is drained, and offers no controls to someone who may only read capacity', async () => {
    const readOnly = makeMe({}, [SUPER_ADMIN]);
    readOnly.capabilities = { actions: SUPER_ADMIN_ACTIONS.filter((a) => a !== 'capacity.manage'), orgs: [], groups: [] };
    stubFetch(routes({ 'GET /api/v1/me': json(200, readOnly), 'GET /api/v1/drains': json(200, { items: [elsewhere] }) }));
    renderApp(PAGE);

    expect(await screen.findByText('Nothing is drained: every card takes sessions.')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Drain…' })).not.toBeInTheDocument();
  });

  it('hides the End and Cancel buttons from someone who may only read capacity', async () => {
    const readOnly = makeMe({}, [SUPER_ADMIN]);
    readOnly.capabilities = { actions: SUPER_ADMIN_ACTIONS.filter((a) => a !== 'capacity.manage'), orgs: [], groups: [] };
    stubFetch(routes({ 'GET /api/v1/me': json(200, readOnly) }));
    renderApp(PAGE);

    const table = await drainsTable();
    expect(within(table).queryByRole('button')).not.toBeInTheDocument();
  });
});
