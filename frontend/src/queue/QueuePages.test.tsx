import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import dayjs from 'dayjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { QueueItemOut } from '../api/types';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { emptyPage, makeMe, SUPER_ADMIN } from '../test/fixtures';
import { renderApp } from '../test/render';
import type { NoticeOut } from './notices';
import { formatWait, heldInWords, startInWords } from './QueueTable';

const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));
const noNotices = json(200, { items: [], counts: [] });
/** What the admin queue asks for besides the queue: the notices, and the groups' names. */
const adminExtras = { 'GET /api/v1/notices': noNotices, 'GET /api/v1/orgs': json(200, emptyPage) };
const clock = (iso: string) => dayjs(iso).format('HH:mm');

/** Freezes the clock (timers still run) at 12:00:19 UTC on the day the sample data is set. */
function freezeClock() {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-30T12:00:19Z'));
}
afterEach(() => vi.useRealTimers());

function item(overrides: Partial<QueueItemOut>): QueueItemOut {
  return {
    id: 'r1',
    user_id: '00000000-0000-4000-8000-000000000002',
    user_email: 'grace@example.org',
    group_id: '00000000-0000-4000-8000-0000000000b2',
    model: 'A100-80GB',
    tier: '1/4',
    status: 'queued',
    reason: 'No free 1/4 slot.',
    enqueued_at: '2026-11-30T11:00:00Z',
    decided_at: null,
    position: 1,
    estimated_wait_seconds: 900,
    reserved_card_id: null,
    priority: {
      value: 1.75,
      waited_seconds: 600,
      wait_bonus: 0.5,
      user_usage: 0.25,
      group_usage: 0.125,
      weight: 2,
      starving: true,
      org_value: -0.5,
      org_waited_seconds: 900,
      org_usage: 1.5,
      org_weight: 1.5,
    },
    ...overrides,
  };
}

describe('queue', () => {
  it('shows every request with its standing and the parts of its priority', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      ...adminExtras,
      'GET /api/v1/queue': json(200, {
        items: [
          item({}),
          item({
            id: 'r2',
            user_email: 'alan@example.org',
            status: 'admitted',
            position: null,
            estimated_wait_seconds: null,
            priority: null,
            reason: 'Admitted.',
          }),
        ],
      }),
    });
    renderApp('/admin/queue');

    const table = await screen.findByRole('table', { name: 'Queue' });
    const queued = within(table).getByText('grace@example.org').closest('tr')!;
    expect(within(queued).getByText('Queued')).toBeInTheDocument();
    expect(within(queued).getByText('about 15 min')).toBeInTheDocument();
    expect(within(queued).getByText('1.75')).toBeInTheDocument();
    expect(within(queued).getByText('starving')).toBeInTheDocument();
    expect(queued).toHaveTextContent('wait bonus 0.5 · user usage 0.25 · group usage 0.125 · weight 2');
    expect(queued).toHaveTextContent("organization's turn -0.5: usage 1.5 · weight 1.5");
    const admitted = within(table).getByText('alan@example.org').closest('tr')!;
    expect(within(admitted).getByText('Admitted')).toBeInTheDocument();
    expect(within(admitted).queryByRole('button', { name: 'Cancel' })).not.toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/queue')[0].query.get('scope')).toBe('all');
  });

  it('asks before cancelling a request and shows why it failed', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      ...adminExtras,
      'GET /api/v1/queue': json(200, { items: [item({})] }),
      'DELETE /api/v1/queue/r1': apiError(409, 'not_queued', 'The request was admitted meanwhile.'),
    });
    renderApp('/admin/queue');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Cancel' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel request' });
    expect(dialog).toHaveTextContent("grace@example.org's queued request");
    expect(api.callsTo('DELETE', '/api/v1/queue/r1')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Cancel request' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('The request was admitted meanwhile.');
  });

  it('says when the queue is empty', async () => {
    stubFetch({ 'GET /api/v1/me': superAdmin, ...adminExtras, 'GET /api/v1/queue': json(200, { items: [] }) });
    renderApp('/admin/queue');
    expect(await screen.findByText('No admission requests in your groups.')).toBeInTheDocument();
    expect(await screen.findByText('No session in your groups is waiting to be paused.')).toBeInTheDocument();
    expect(screen.getByText('No session was preempted in the last 30 days.')).toBeInTheDocument();
  });

  it('says by when a card is being freed for a queued request', async () => {
    freezeClock();
    stubFetch({
      'GET /api/v1/me': superAdmin,
      ...adminExtras,
      'GET /api/v1/queue': json(200, { items: [item({ card_freed_at: '2026-11-30T12:25:00Z' })] }),
    });
    renderApp('/admin/queue');

    const table = await screen.findByRole('table', { name: 'Queue' });
    const row = within(table).getByText('grace@example.org').closest('tr')!;
    expect(row).toHaveTextContent(`A card is being freed for it at ${clock('2026-11-30T12:25:00Z')}`);
  });
});

const ORG_ID = '00000000-0000-4000-8000-0000000000c9';
const OPTICS = '00000000-0000-4000-8000-0000000000b2';
const ACOUSTICS = '00000000-0000-4000-8000-0000000000b3';
const UNSEEN = 'f1e2d3c4-0000-4000-8000-0000000000b4';

function notice(overrides: Partial<NoticeOut>): NoticeOut {
  return {
    id: 'n1',
    kind: 'preemption',
    reason: 'fair_share',
    session_id: 's9',
    user_id: '00000000-0000-4000-8000-000000000002',
    group_id: OPTICS,
    for_group_id: ACOUSTICS,
    request_id: 'r7',
    card_id: 'card-1',
    drain_id: null,
    booking_id: null,
    noticed_at: '2026-11-30T12:00:00Z',
    deadline: '2026-11-30T12:10:00Z',
    ended_at: null,
    status: 'pending',
    ...overrides,
  };
}

describe('pending preemptions', () => {
  it('lists each notice soonest first, with its reason in words, its countdown and the groups by name', async () => {
    freezeClock();
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/queue': json(200, { items: [] }),
      'GET /api/v1/orgs': json(200, {
        items: [{ id: ORG_ID, name: 'Research', created_at: '2026-01-01T00:00:00Z' }],
        next_cursor: null,
      }),
      [`GET /api/v1/orgs/${ORG_ID}/groups`]: json(200, {
        items: [
          { id: OPTICS, name: 'Optics', org_id: ORG_ID, created_at: '2026-01-01T00:00:00Z' },
          { id: ACOUSTICS, name: 'Acoustics', org_id: ORG_ID, created_at: '2026-01-01T00:00:00Z' },
        ],
        next_cursor: null,
      }),
      'GET /api/v1/notices': json(200, {
        items: [
          notice({
            id: 'n2',
            kind: 'drain',
            reason: 'xid',
            group_id: UNSEEN,
            for_group_id: null,
            request_id: null,
            deadline: '2026-11-30T13:00:00Z',
          }),
          notice({}),
        ],
        counts: [
          { group_id: OPTICS, preempted: 3, preempting: 0 },
          { group_id: ACOUSTICS, preempted: 0, preempting: 5 },
        ],
      }),
    });
    renderApp('/admin/queue');

    const table = await screen.findByRole('table', { name: 'Pending preemptions' });
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(2);
    await waitFor(() => expect(rows[0]).toHaveTextContent('Optics'));
    expect(rows[0]).toHaveTextContent(
      `PreemptionFair share: its group had more than its sharePaused in 9:41 (at ${clock('2026-11-30T12:10:00Z')})OpticsAcoustics`,
    );
    expect(rows[1]).toHaveTextContent('DrainHardware error on the card');
    expect(rows[1]).toHaveTextContent(`Paused in 59:41 (at ${clock('2026-11-30T13:00:00Z')})`);
    // A group the caller does not see by name shows by the start of its id; a drain is for no group.
    expect(rows[1]).toHaveTextContent('f1e2d3c4…—');

    const counts = screen.getByRole('table', { name: 'Preemptions in the last 30 days' });
    const countRows = within(counts).getAllByRole('row').slice(1);
    expect(countRows[0]).toHaveTextContent('Acoustics05');
    expect(countRows[1]).toHaveTextContent('Optics30');
    const asked = api.callsTo('GET', '/api/v1/notices')[0].query;
    expect(asked.get('pending')).toBe('true');
    expect(asked.get('days')).toBe('30');
  });

  it('shows why the notices could not load', async () => {
    stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/orgs': json(200, emptyPage),
      'GET /api/v1/queue': json(200, { items: [] }),
      'GET /api/v1/notices': apiError(500, 'internal', 'Something broke.'),
    });
    renderApp('/admin/queue');
    expect(await screen.findByRole('alert')).toHaveTextContent('Something broke.');
  });
});

describe('my requests', () => {
  it('tells the caller by when a card is being freed for them', async () => {
    freezeClock();
    stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/queue': json(200, {
        items: [item({ priority: null, user_email: 'ada@example.org', card_freed_at: '2026-11-30T12:25:00Z' })],
      }),
    });
    renderApp('/requests');
    const table = await screen.findByRole('table', { name: 'My requests' });
    expect(table).toHaveTextContent(`A card is being freed for you at ${clock('2026-11-30T12:25:00Z')}`);
  });

  it('says why a request waits: what is ahead of it, and for what reasons', async () => {
    const words = '3 requests are ahead, from 2 groups: 1 is within its group\'s booking; 2 have a higher priority (less recent use, or a longer wait).';
    stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/queue': json(200, {
        items: [
          item({
            priority: null,
            user_email: 'ada@example.org',
            ahead: { requests: 3, groups: 2, reasons: { booking: 1, waited_too_long: 0, priority: 2, earlier: 0 }, in_words: words },
            waits_for: 'a 1/4 slot of a shared A100-80GB card',
          }),
        ],
      }),
    });
    renderApp('/requests');
    const table = await screen.findByRole('table', { name: 'My requests' });
    expect(within(table).getByText(words)).toBeInTheDocument();
    expect(within(table).getByText('Waits for a 1/4 slot of a shared A100-80GB card.')).toBeInTheDocument();
  });

  it("lists the caller's own requests without priorities and cancels one", async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/queue': json(200, { items: [item({ priority: null, user_email: 'ada@example.org' })] }),
      'DELETE /api/v1/queue/r1': json(204, null),
    });
    renderApp('/requests');
    const user = userEvent.setup();

    const table = await screen.findByRole('table', { name: 'My requests' });
    expect(within(table).queryByText('Priority')).not.toBeInTheDocument();
    expect(within(table).getByText('A100-80GB 1/4')).toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/queue')[0].query.get('scope')).toBe('own');

    await user.click(within(table).getByRole('button', { name: 'Cancel' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel request' });
    await user.click(within(dialog).getByRole('button', { name: 'Cancel request' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/queue/r1')).toHaveLength(1));
    await waitFor(() => expect(api.callsTo('GET', '/api/v1/queue')).toHaveLength(2));
  });

  it('shows when a request will likely start, by when almost surely, and how that moved', async () => {
    freezeClock();
    const start = {
      likely_at: '2026-11-30T14:20:00Z',
      surely_by: '2026-11-30T15:05:00Z',
      first_likely_at: '2026-11-30T13:50:00Z',
      forecast_at: '2026-11-30T12:00:00Z',
    };
    stubFetch({
      'GET /api/v1/me': json(200, makeMe()),
      'GET /api/v1/queue': json(200, { items: [item({ priority: null, user_email: 'ada@example.org', start })] }),
    });
    renderApp('/requests');
    const table = await screen.findByRole('table', { name: 'My requests' });
    expect(table).toHaveTextContent(
      `likely around ${clock(start.likely_at)}, almost surely before ${clock(start.surely_by)} (first said ${clock(start.first_likely_at)})`,
    );
    expect(within(table).getByText('Estimated start')).toBeInTheDocument();
  });

  it('says a start beyond the horizon, or one already as sure as it gets, plainly', () => {
    const now = Date.parse('2026-11-30T12:00:19Z');
    const base = { first_likely_at: null, forecast_at: '2026-11-30T12:00:00Z' };
    expect(startInWords({ ...base, likely_at: null, surely_by: null }, now)).toBe('not within the next 7 days, as things stand');
    const at = '2026-11-30T12:40:00Z';
    expect(startInWords({ ...base, likely_at: at, surely_by: at }, now)).toBe(`likely around ${clock(at)}`);
    expect(startInWords({ ...base, likely_at: at, surely_by: null }, now)).toBe(`likely around ${clock(at)}, possibly much later`);
  });

  it("says how many cards are held for another group's booking, and until when", () => {
    const until = '2026-11-30T10:15:00Z';
    const now = Date.parse('2026-11-30T10:00:00Z');
    expect(heldInWords({ cards: 1, until }, now)).toBe(`1 card of this model is held for another group's booking until ${clock(until)}.`);
    expect(heldInWords({ cards: 2, until }, now)).toBe(`2 cards of this model are held for another group's booking until ${clock(until)}.`);
  });

  it('formats waits in words', () => {
    expect(formatWait(null)).toBe('—');
    expect(formatWait(30)).toBe('under a minute');
    expect(formatWait(3600 + 20 * 60)).toBe('about 1 h 20 min');
    expect(formatWait(7200)).toBe('about 2 h');
  });
});
