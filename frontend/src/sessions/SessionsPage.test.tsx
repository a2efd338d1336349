import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import type { SessionOut } from '../api/hooks/sessions';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { makeMe } from '../test/fixtures';
import { renderApp } from '../test/render';
import { formatClock } from '../queue/countdown';
import { makeMembership, makeSession, makeTier } from './testData';

const member = json(200, makeMe({ memberships: [makeMembership()] }));

const running = makeSession({
  idle_since: '2026-11-30T11:00:00Z',
  idle_pause_at: '2026-11-30T12:30:00Z',
  can_keep_running: true,
});
const queued = makeSession({
  id: 's2',
  name: 'training',
  session_type: 'vscode',
  state: 'queued',
  state_reason: 'No free 1/2 slot.',
  tier_name: '1/2',
  vram_mib: 40960,
  price_per_hour: '5',
  cost: '0',
  billing: false,
  queue_position: 2,
  estimated_wait_seconds: 900,
  ahead: {
    requests: 1,
    groups: 1,
    reasons: { booking: 0, waited_too_long: 0, priority: 1, earlier: 0 },
    in_words: '1 request is ahead: it has a higher priority (less recent use, or a longer wait).',
  },
  gpu_util_percent: null,
  vram_used_mib: null,
  peak_vram_mib: null,
  actions: ['stop'],
  can_open: false,
});
const cpuOnly = makeSession({
  id: 's3',
  name: 'shell',
  session_type: 'terminal',
  state: 'paused',
  state_reason: 'Paused by its owner.',
  tier_id: null,
  model: null,
  tier_name: null,
  vram_mib: null,
  price_per_hour: '0.1',
  cost: '1',
  billing: false,
  gpu_util_percent: null,
  vram_used_mib: null,
  peak_vram_mib: null,
  actions: ['resume', 'stop'],
  can_open: false,
});

function card(name: string): HTMLElement {
  return screen.getByRole('article', { name });
}

function listOf(...sessions: SessionOut[]) {
  return json(200, { items: sessions });
}

describe('my sessions', () => {
  it("shows a waiting session's forecast start in place of the estimated wait", async () => {
    const start = {
      likely_at: '2026-11-30T14:20:00Z',
      surely_by: '2026-11-30T15:05:00Z',
      first_likely_at: '2026-11-30T14:20:00Z',
      forecast_at: '2026-11-30T12:00:00Z',
    };
    stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions': listOf({ ...queued, start, waits_for: 'a 1/2 slot of a shared A100-80GB card' }),
    });
    renderApp('/sessions');
    await screen.findByRole('article', { name: 'training' });
    const waiting = card('training');
    expect(waiting).toHaveTextContent(`Startslikely around ${formatClock(start.likely_at)}, almost surely before ${formatClock(start.surely_by)}`);
    expect(waiting).not.toHaveTextContent('estimated wait');
    expect(waiting).not.toHaveTextContent('first said');
    expect(waiting).toHaveTextContent('Waits fora 1/2 slot of a shared A100-80GB card');
  });

  it('shows each session with its state, slice, price, queue place and what can be done with it', async () => {
    const api = stubFetch({ 'GET /api/v1/me': member, 'GET /api/v1/sessions': listOf(running, queued, cpuOnly) });
    renderApp('/sessions');

    await screen.findByRole('article', { name: 'notebook' });
    const first = card('notebook');
    expect(within(first).getByText('Running')).toBeInTheDocument();
    expect(within(first).getByText('Running on node-a.')).toBeInTheDocument();
    expect(first).toHaveTextContent('A100-80GB 1/4 · 20 GiB (peak 3.1 GiB of 20 GiB)');
    expect(first).toHaveTextContent('GPU 45% · 2 GiB VRAM in use');
    expect(first).toHaveTextContent('2.5 credits per hour');
    expect(first).toHaveTextContent('12.75 credits');
    expect(within(first).getByText('Idle: it will be paused')).toBeInTheDocument();
    for (const name of ['Open', 'Pause', 'Stop', 'Delete', 'Keep running']) {
      expect(within(first).getByRole('button', { name })).toBeInTheDocument();
    }
    expect(within(first).queryByRole('button', { name: 'Resume' })).not.toBeInTheDocument();

    const second = card('training');
    expect(within(second).getByText('Queued')).toBeInTheDocument();
    expect(within(second).getByText('No free 1/2 slot.')).toBeInTheDocument();
    expect(second).toHaveTextContent('position 2, estimated wait about 15 min');
    expect(second).toHaveTextContent('Why1 request is ahead: it has a higher priority (less recent use, or a longer wait).');
    expect(second).toHaveTextContent('(not billing now)');
    expect(within(second).queryByRole('button', { name: 'Open' })).not.toBeInTheDocument();
    expect(within(second).queryByRole('button', { name: 'Pause' })).not.toBeInTheDocument();
    expect(within(second).queryByText('Idle: it will be paused')).not.toBeInTheDocument();

    const third = card('shell');
    expect(third).toHaveTextContent('CPU only');
    expect(within(third).getByText('Paused')).toBeInTheDocument();
    expect(within(third).getByRole('button', { name: 'Resume' })).toBeInTheDocument();
    expect(within(third).queryByRole('button', { name: 'Pause' })).not.toBeInTheDocument();

    expect(api.callsTo('GET', '/api/v1/sessions')[0].query.get('scope')).toBe('mine');
    expect(screen.getByRole('link', { name: 'New session' })).toHaveAttribute('href', '/sessions/new');
  });

  it("offers its owner the tiers of the group that would start a waiting session now, cheapest first", async () => {
    const me = makeMe({ memberships: [makeMembership()] });
    const mine = { ...queued, owner_id: me.user.id };
    const api = stubFetch({
      'GET /api/v1/me': json(200, me),
      'GET /api/v1/sessions': listOf(mine),
      'GET /api/v1/tiers': json(200, {
        items: [
          makeTier({ id: 'big', name: 'exclusive', price_per_hour: '10', free_slots: 1 }),
          makeTier({ id: mine.tier_id!, name: '1/2', price_per_hour: '5', free_slots: 0 }),
          makeTier({ id: 'small', name: '1/8', price_per_hour: '1.25', free_slots: 3 }),
          makeTier({ id: 'none', name: '1/4', price_per_hour: '2.5', free_slots: 0 }),
        ],
      }),
    });
    renderApp('/sessions');
    const second = await screen.findByRole('article', { name: 'training' });
    await waitFor(() =>
      expect(second).toHaveTextContent('Starts nowA100-80GB 1/8 (1.25 credits/h), A100-80GB exclusive (10 credits/h): start one instead'),
    );
    expect(within(second).getByRole('link', { name: 'start one instead' })).toHaveAttribute('href', '/sessions/new');
    expect(api.callsTo('GET', '/api/v1/tiers')[0].query.get('group_id')).toBe(mine.group_id);
  });

  it('pauses a session and shows its new state', async () => {
    let paused = false;
    const api = stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions': () => listOf(paused ? { ...running, state: 'pausing', actions: [] } : running),
      'POST /api/v1/sessions/s1/pause': () => {
        paused = true;
        return json(200, { ...running, state: 'pausing', actions: [] });
      },
    });
    renderApp('/sessions');
    const user = userEvent.setup();

    await user.click(await within(await screen.findByRole('article', { name: 'notebook' })).findByRole('button', { name: 'Pause' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/sessions/s1/pause')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/sessions/s1/pause')[0].headers.get('X-CSRF-Token')).toBe('csrf-from-me');
    expect(await within(card('notebook')).findByText('Pausing')).toBeInTheDocument();
    expect(within(card('notebook')).queryByRole('button', { name: 'Pause' })).not.toBeInTheDocument();
  });

  it('shows why an action was refused', async () => {
    stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions': listOf(running),
      'POST /api/v1/sessions/s1/pause': apiError(409, 'invalid_transition', 'A stopping session cannot be paused.'),
    });
    renderApp('/sessions');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Pause' }));
    expect(await within(card('notebook')).findByRole('alert')).toHaveTextContent('A stopping session cannot be paused.');
  });

  it('asks before stopping, and defers an idle pause', async () => {
    const api = stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions': listOf(running),
      'POST /api/v1/sessions/s1/stop': json(200, { ...running, state: 'stopping', actions: [] }),
      'POST /api/v1/sessions/s1/keep-running': json(200, { ...running, idle_pause_at: null }),
    });
    renderApp('/sessions');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Keep running' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/sessions/s1/keep-running')).toHaveLength(1));

    await user.click(screen.getByRole('button', { name: 'Stop' }));
    const dialog = await screen.findByRole('dialog', { name: 'Stop session' });
    expect(api.callsTo('POST', '/api/v1/sessions/s1/stop')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Stop session' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/sessions/s1/stop')).toHaveLength(1));
  });

  it('deletes a session, with its home volume only when asked to', async () => {
    const api = stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions': listOf(running),
      'DELETE /api/v1/sessions/s1': json(204, null),
    });
    renderApp('/sessions');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Delete' }));
    let dialog = await screen.findByRole('dialog', { name: 'Delete session' });
    await user.click(within(dialog).getByRole('button', { name: 'Delete session' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/sessions/s1')).toHaveLength(1));
    expect(api.callsTo('DELETE', '/api/v1/sessions/s1')[0].query.get('delete_home')).toBe('false');

    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Delete session' })).not.toBeInTheDocument());
    await user.click(screen.getByRole('button', { name: 'Delete' }));
    dialog = await screen.findByRole('dialog', { name: 'Delete session' });
    await user.click(within(dialog).getByLabelText('Also delete its home volume home-s1'));
    await user.click(within(dialog).getByRole('button', { name: 'Delete session' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/sessions/s1')).toHaveLength(2));
    expect(api.callsTo('DELETE', '/api/v1/sessions/s1')[1].query.get('delete_home')).toBe('true');
  });

  it('opens the session in a tab opened at the click', async () => {
    const tab = { opener: {} as unknown, location: { href: '' }, close: vi.fn() };
    const open = vi.fn(() => tab);
    vi.stubGlobal('open', open);
    stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions': listOf(running),
      'POST /api/v1/sessions/s1/entry': json(200, { url: 'https://s1.sessions.example.org/?ticket=abc' }),
    });
    renderApp('/sessions');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Open' }));
    expect(open).toHaveBeenCalledWith('', '_blank');
    await waitFor(() => expect(tab.location.href).toBe('https://s1.sessions.example.org/?ticket=abc'));
    expect(tab.opener).toBeNull();
    expect(tab.close).not.toHaveBeenCalled();
  });

  it('says when there are no sessions, and offers none to start without a group', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()), 'GET /api/v1/sessions': listOf() });
    renderApp('/sessions');
    expect(await screen.findByText(/You have no sessions\. Sessions run for a group/)).toBeInTheDocument();
    expect(screen.queryByRole('link', { name: 'New session' })).not.toBeInTheDocument();
  });

  it('shows why the list could not load', async () => {
    stubFetch({ 'GET /api/v1/me': member, 'GET /api/v1/sessions': apiError(500, 'internal', 'Something broke.') });
    renderApp('/sessions');
    expect(await screen.findByRole('alert')).toHaveTextContent('Something broke.');
  });
});

describe('session detail', () => {
  it('shows the state history and the setup', async () => {
    stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions/s1': json(200, {
        ...running,
        transitions: [
          { from_state: null, to_state: 'queued', reason: 'Waiting for a 1/4 slot.', at: '2026-11-30T09:58:00Z' },
          { from_state: 'queued', to_state: 'starting', reason: 'Admitted on node-a.', at: '2026-11-30T09:59:00Z' },
          { from_state: 'starting', to_state: 'running', reason: 'Pod ready.', at: '2026-11-30T10:00:00Z' },
        ],
      }),
    });
    renderApp('/sessions/s1');

    const history = await screen.findByRole('table', { name: 'State history' });
    const rows = within(history).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(3);
    expect(rows[1]).toHaveTextContent('QueuedStartingAdmitted on node-a.');
    expect(screen.getByText('Group Optics (Research)')).toBeInTheDocument();
    expect(screen.getByText(/home-s1 \(home\) at/)).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Pause' })).toBeInTheDocument();
  });
});
