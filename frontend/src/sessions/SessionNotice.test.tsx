import { act, screen, within } from '@testing-library/react';
import dayjs from 'dayjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { json, stubFetch } from '../test/fetchStub';
import { makeMe } from '../test/fixtures';
import { renderApp } from '../test/render';
import { makeMembership, makeNotice, makeSession } from './testData';

const member = json(200, makeMe({ memberships: [makeMembership()] }));
// The notice's deadline is 12:10:00 UTC: 9 minutes 41 seconds after now.
const NOW = new Date('2026-11-30T12:00:19Z');
const clock = (iso: string) => dayjs(iso).format('HH:mm');

const noticed = makeSession({ notice: makeNotice() });
const waiting = makeSession({
  id: 's2',
  name: 'training',
  state: 'queued',
  state_reason: 'No free 1/4 slot.',
  billing: false,
  queue_position: 1,
  estimated_wait_seconds: 600,
  actions: ['stop'],
  can_open: false,
  card_freed_at: '2026-11-30T12:25:00Z',
});

describe('a session given notice', () => {
  // Only the clock is frozen: timers run, so the countdown's tick comes within a second.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it('says on its card when it will be paused, why, and that it comes back, counting down', async () => {
    stubFetch({ 'GET /api/v1/me': member, 'GET /api/v1/sessions': json(200, { items: [noticed, waiting] }) });
    renderApp('/sessions');

    const card = await screen.findByRole('article', { name: 'notebook' });
    const banner = within(card).getByRole('alert', { name: /This session will be paused/ });
    expect(banner).toHaveTextContent(`This session will be paused in 9:41 (at ${clock('2026-11-30T12:10:00Z')})`);
    expect(banner).toHaveTextContent('Its card is needed by a group that has had less than its share.');
    expect(banner).toHaveTextContent('Save your work; it resumes by itself when a card is free. Its volumes are kept.');
    expect(within(banner).getByRole('timer')).toHaveTextContent('9:41');

    act(() => vi.setSystemTime(NOW.getTime() + 2_000));
    expect(await within(banner).findByText('9:39')).toBeInTheDocument();

    const other = screen.getByRole('article', { name: 'training' });
    expect(within(other).queryByRole('alert')).not.toBeInTheDocument();
  });

  it('says on a waiting card by when a card is being freed for it', async () => {
    stubFetch({ 'GET /api/v1/me': member, 'GET /api/v1/sessions': json(200, { items: [noticed, waiting] }) });
    renderApp('/sessions');

    const card = await screen.findByRole('article', { name: 'training' });
    expect(within(card).getByRole('status')).toHaveTextContent(
      `A card is being freed for you at ${clock('2026-11-30T12:25:00Z')}`,
    );
    const running = screen.getByRole('article', { name: 'notebook' });
    expect(running).not.toHaveTextContent('A card is being freed');
  });

  it('reads "now" once the deadline has passed, and names a hardware error in red', async () => {
    const late = makeSession({
      notice: makeNotice({
        kind: 'drain',
        reason: 'xid',
        message: 'Its card reported a hardware error.',
        deadline: '2026-11-30T12:00:00Z',
      }),
    });
    stubFetch({
      'GET /api/v1/me': member,
      'GET /api/v1/sessions/s1': json(200, { ...late, transitions: [] }),
      'GET /api/v1/sessions/s1/usage': json(200, {
        session_id: 's1',
        since: '2026-11-30T09:58:00Z',
        until: '2026-11-30T12:00:00Z',
        vram_limit_mib: 20480,
        current: null,
        points: [],
        cost: [],
        cost_total: '12.75',
      }),
    });
    renderApp('/sessions/s1');

    const banner = await screen.findByRole('alert', { name: /This session will be paused/ });
    expect(banner).toHaveTextContent(`This session will be paused now (at ${clock('2026-11-30T12:00:00Z')})`);
    expect(banner).toHaveTextContent('Its card reported a hardware error.');
    expect(within(banner).queryByRole('timer')).not.toBeInTheDocument();
  });
});
