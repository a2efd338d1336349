import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BookingIn } from '../api/hooks/bookings';
import type { RoleGrantOut } from '../api/types';
import { apiError, json, stubFetch, type StubRequest } from '../test/fetchStub';
import { emptyPage, makeMe } from '../test/fixtures';
import { renderApp } from '../test/render';
import { GROUP_ID, makeMembership, makeTier } from '../sessions/testData';
import { makeBooking, makeCalendar, makeResource } from './testData';

// Monday 2 March 2026, 08:20 in the browser's time zone: a new booking starts at 09:00 by default.
const NOW = new Date(2026, 2, 2, 8, 20);
const local = (hours: number, minutes = 0) => new Date(2026, 2, 2, hours, minutes).toISOString();

const adminOfOptics: RoleGrantOut = {
  role: 'group_admin',
  org_id: makeMembership().org_id,
  group_id: GROUP_ID,
  org_name: 'Research',
  group_name: 'Optics',
};
const groupAdmin = json(200, makeMe({ memberships: [makeMembership()] }, [adminOfOptics]));
const member = json(200, makeMe({ memberships: [makeMembership()] }));

const tiers = json(200, {
  items: [
    makeTier(),
    makeTier({ id: 't-ex', name: 'exclusive', kind: 'exclusive', denominator: null, vram_mib: 81920, compute_percent: 100 }),
  ],
});

const CONFLICT = 'At 2026-03-02T09:00:00+00:00 this booking needs 2 cards of A100-80GB; 7 of 8 are booked already.';

/** Two cards or more do not fit; one does. */
function check(request: StubRequest) {
  const body = request.body as BookingIn;
  return json(
    200,
    body.count >= 2
      ? { fits: false, code: 'booking_conflict', message: CONFLICT, at: local(9) }
      : { fits: true, code: null, message: 'It fits.', at: null },
  );
}

function routes(me: Response, extra: Parameters<typeof stubFetch>[0] = {}) {
  return stubFetch({
    'GET /api/v1/me': me,
    'GET /api/v1/tiers': tiers,
    'GET /api/v1/orgs': json(200, emptyPage),
    'GET /api/v1/bookings': json(200, { items: [] }),
    'GET /api/v1/bookings/calendar': json(200, makeCalendar([makeResource({}, { day: 1, from: '10:00', to: '12:00', count: 8 })])),
    'POST /api/v1/bookings/check': check,
    ...extra,
  });
}

async function choose(label: string, option: string) {
  const user = userEvent.setup();
  await user.click(screen.getByRole('combobox', { name: label }));
  await user.click(await screen.findByRole('option', { name: option, hidden: true }));
}

async function openForm() {
  const user = userEvent.setup();
  await user.click(await screen.findByRole('button', { name: 'Book capacity' }));
  const dialog = await screen.findByRole('dialog', { name: 'Book capacity' });
  await waitFor(() => expect(within(dialog).getByRole('combobox', { name: 'Group' })).toHaveValue('Optics'));
  return dialog;
}

describe('bookings page', () => {
  // Only the clock is frozen: timers run, so dialogs and the debounced check behave as in a browser.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it("checks a booking as it is filled in, shows the refusal's moment, and books what was chosen", async () => {
    const api = routes(groupAdmin, { 'POST /api/v1/bookings': json(201, makeBooking({ tier_id: 't-ex', count: 1 })) });
    renderApp('/bookings');
    const user = userEvent.setup();

    // The calendar of the first model, this week: Tuesday's booked cards in words.
    const table = await screen.findByRole('table', { name: /^Booked and free capacity of A100-80GB/ });
    expect(within(table).getByText('8 booked, 0 free')).toBeInTheDocument();

    const dialog = await openForm();
    expect(within(dialog).getByRole('combobox', { name: 'GPU model' })).toHaveValue('A100-80GB');
    await choose('Tier', 'exclusive · 80 GiB');
    const count = within(dialog).getByRole('textbox', { name: 'Sessions' });
    await user.clear(count);
    await user.type(count, '2');

    // Two cards do not fit: the server's reason, and the first moment short in local time.
    expect(await within(dialog).findByText(CONFLICT)).toBeInTheDocument();
    expect(within(dialog).getByText('It does not fit')).toBeInTheDocument();
    expect(within(dialog).getByText(/First moment short/)).toHaveTextContent('First moment short: Mon 2 Mar 2026 09:00');
    const asked = api.callsTo('POST', '/api/v1/bookings/check').at(-1)!.body as BookingIn;
    expect(asked).toMatchObject({ group_id: GROUP_ID, tier_id: 't-ex', count: 2, starts_at: local(9), ends_at: local(10) });

    await user.clear(count);
    await user.type(count, '1');
    expect(await within(dialog).findByText('It fits.')).toBeInTheDocument();
    await user.type(within(dialog).getByRole('textbox', { name: 'Title' }), 'Tuesday class');
    fireEvent.change(within(dialog).getByLabelText('To'), { target: { value: '11:30' } });

    await user.click(within(dialog).getByRole('button', { name: 'Book' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/bookings')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/bookings')[0].body).toEqual({
      group_id: GROUP_ID,
      tier_id: 't-ex',
      count: 1,
      starts_at: local(9),
      ends_at: local(11, 30),
      weekly_until: null,
      title: 'Tuesday class',
      notice_minutes: 2,
    });
    expect(await screen.findByText('Booked 1 × exclusive for Optics: Tuesday class.')).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Book capacity' })).not.toBeInTheDocument());
    // The list and the calendar are asked for again.
    await waitFor(() => expect(api.callsTo('GET', '/api/v1/bookings').length).toBeGreaterThan(1));
  });

  it('books a window across midnight, and shows a refusal on the field it names', async () => {
    const api = routes(groupAdmin, {
      'POST /api/v1/bookings': apiError(422, 'invalid_request', 'The request is not valid.', [
        { field: 'notice_minutes', message: 'Input should be less than or equal to 1440' },
      ]),
    });
    renderApp('/bookings');
    const user = userEvent.setup();

    const dialog = await openForm();
    await choose('Tier', '1/4 · 20 GiB');
    await user.type(within(dialog).getByRole('textbox', { name: 'Title' }), 'Night run');
    fireEvent.change(within(dialog).getByLabelText('From'), { target: { value: '22:00' } });
    fireEvent.change(within(dialog).getByLabelText('To'), { target: { value: '02:00' } });
    expect(await within(dialog).findByText('The next day')).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Book' }));

    await waitFor(() => expect(api.callsTo('POST', '/api/v1/bookings')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/bookings')[0].body).toMatchObject({
      tier_id: 't1',
      starts_at: local(22),
      ends_at: new Date(2026, 2, 3, 2, 0).toISOString(),
    });
    // The field the server names shows its message; the dialog stays open.
    expect(await within(dialog).findByText('Input should be less than or equal to 1440')).toBeInTheDocument();
    expect(within(dialog).getByRole('textbox', { name: 'Notice (minutes)' })).toHaveAttribute('aria-invalid', 'true');
  });

  it('books a window of several days, to the chosen end day', async () => {
    const api = routes(groupAdmin);
    renderApp('/bookings');
    const user = userEvent.setup();

    const dialog = await openForm();
    await choose('Tier', '1/4 · 20 GiB');
    await user.type(within(dialog).getByRole('textbox', { name: 'Title' }), 'Paper deadline');
    fireEvent.change(within(dialog).getByLabelText('To'), { target: { value: '18:00' } });
    await user.click(within(dialog).getByRole('button', { name: 'Ends on' }));
    await user.click(await screen.findByRole('button', { name: '6 March 2026', hidden: true }));
    await user.click(within(dialog).getByRole('button', { name: 'Book' }));

    await waitFor(() => expect(api.callsTo('POST', '/api/v1/bookings')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/bookings')[0].body).toMatchObject({
      starts_at: local(9),
      ends_at: new Date(2026, 2, 6, 18, 0).toISOString(),
    });
  });

  it('checks the form before asking: a start in the past and an empty title are refused where typed', async () => {
    const api = routes(groupAdmin);
    renderApp('/bookings');
    const user = userEvent.setup();

    const dialog = await openForm();
    await choose('Tier', '1/4 · 20 GiB');
    fireEvent.change(within(dialog).getByLabelText('From'), { target: { value: '07:00' } });
    await user.click(within(dialog).getByRole('button', { name: 'Book' }));
    expect(await within(dialog).findByText('Choose now or a later time.')).toBeInTheDocument();
    expect(within(dialog).getByText('A title is required.')).toBeInTheDocument();
    expect(api.callsTo('POST', '/api/v1/bookings')).toHaveLength(0);
  });

  it('offers booking only to those who may book, and the calendar and the list to everyone', async () => {
    routes(member, { 'GET /api/v1/bookings': json(200, { items: [makeBooking({ can_manage: false })] }) });
    renderApp('/bookings');

    expect(await screen.findByRole('heading', { name: 'Bookings' })).toBeInTheDocument();
    const list = await screen.findByRole('table', { name: 'My bookings' });
    expect(within(list).getByRole('rowheader', { name: 'Tuesday class' })).toBeInTheDocument();
    expect(await screen.findByRole('table', { name: /^Booked and free capacity/ })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Book capacity' })).not.toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Bookings' })).toHaveAttribute('aria-current', 'page');
  });

  it('moves the calendar a week at a time', async () => {
    const api = routes(member);
    renderApp('/bookings');
    const user = userEvent.setup();

    await screen.findByRole('table', { name: 'Booked and free capacity of A100-80GB, 2 Mar to 8 Mar 2026' });
    await user.click(screen.getByRole('button', { name: 'Next week' }));
    expect(await screen.findByRole('table', { name: 'Booked and free capacity of A100-80GB, 9 Mar to 15 Mar 2026' })).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Previous week' }));
    await user.click(screen.getByRole('button', { name: 'Previous week' }));
    expect(await screen.findByRole('table', { name: 'Booked and free capacity of A100-80GB, 23 Feb to 1 Mar 2026' })).toBeInTheDocument();
    const starts = api.callsTo('GET', '/api/v1/bookings/calendar').map((call) => call.query.get('starts_at'));
    expect(starts).toContain(new Date(2026, 2, 9).toISOString());
    expect(starts).toContain(new Date(2026, 1, 23).toISOString());
  });
});
