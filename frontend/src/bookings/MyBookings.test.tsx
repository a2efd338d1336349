import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { json, stubFetch } from '../test/fetchStub';
import { renderUi } from '../test/renderUi';
import { MyBookings } from './MyBookings';
import { at, makeBooking } from './testData';

// Monday 2 March 2026, 08:20 in the browser's time zone.
const NOW = new Date(2026, 2, 2, 8, 20);

const upcoming = makeBooking({ weekly_until: at(29, '23:59') });
const othersGroup = makeBooking({ id: 'b2', title: 'Lab deadline', group_name: 'Vision', count: 4, tier_name: 'exclusive', can_manage: false });
const running = makeBooking({
  id: 'b3',
  title: 'Morning lab',
  starts_at: at(0, '08:00'),
  ends_at: at(0, '09:00'),
  next_window: [at(0, '08:00'), at(0, '09:00')],
  notice_minutes: 0,
});
const cancelled = makeBooking({ id: 'b4', title: 'Called off', status: 'cancelled', next_window: null });

const rowOf = (title: string) => screen.getByRole('rowheader', { name: title }).closest('tr')!;

describe('my bookings', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it('lists each booking in words, with Edit and Cancel only where the caller manages it and may still change it', async () => {
    stubFetch({ 'GET /api/v1/bookings': json(200, { items: [running, upcoming, othersGroup, cancelled] }) });
    renderUi(<MyBookings />);

    await screen.findByRole('table', { name: 'My bookings' });
    const row = rowOf('Tuesday class');
    expect(row).toHaveTextContent('Optics');
    expect(row).toHaveTextContent('30 × 1/4 of A100-80GB');
    expect(row).toHaveTextContent('Tue 3 Mar 10:00–12:00');
    expect(row).toHaveTextContent('Weekly until 31 Mar 2026');
    expect(row).toHaveTextContent('2 minutes notice');
    expect(row).toHaveTextContent('Booked');
    expect(within(row).getByRole('button', { name: 'Edit Tuesday class' })).toBeInTheDocument();
    expect(within(row).getByRole('button', { name: 'Cancel Tuesday class' })).toBeInTheDocument();

    // Another group's booking the caller only sees: no controls.
    const seen = rowOf('Lab deadline');
    expect(seen).toHaveTextContent('4 × exclusive of A100-80GB');
    expect(seen).toHaveTextContent('Once');
    expect(within(seen).queryByRole('button')).not.toBeInTheDocument();

    // Started: it can be cancelled, no longer edited.
    const started = rowOf('Morning lab');
    expect(started).toHaveTextContent('Running now');
    expect(started).toHaveTextContent('No notice');
    expect(within(started).queryByRole('button', { name: /^Edit/ })).not.toBeInTheDocument();
    expect(within(started).getByRole('button', { name: 'Cancel Morning lab' })).toBeInTheDocument();

    const off = rowOf('Called off');
    expect(off).toHaveTextContent('Cancelled');
    expect(within(off).queryByRole('button')).not.toBeInTheDocument();
  });

  it('cancels a booking once asked', async () => {
    const api = stubFetch({
      'GET /api/v1/bookings': json(200, { items: [upcoming] }),
      'POST /api/v1/bookings/b1/cancel': json(200, { ...upcoming, status: 'cancelled' }),
    });
    renderUi(<MyBookings />);
    const user = userEvent.setup();

    await screen.findByRole('table', { name: 'My bookings' });
    await user.click(screen.getByRole('button', { name: 'Cancel Tuesday class' }));
    const dialog = await screen.findByRole('dialog', { name: 'Cancel booking' });
    expect(dialog).toHaveTextContent('Cancel Tuesday class?');
    expect(api.callsTo('POST', '/api/v1/bookings/b1/cancel')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Cancel booking' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/bookings/b1/cancel')).toHaveLength(1));
    await waitFor(() => expect(api.callsTo('GET', '/api/v1/bookings')).toHaveLength(2));
  });

  it('edits a booking before it starts, sending every field as the form holds it', async () => {
    const api = stubFetch({
      'GET /api/v1/bookings': json(200, { items: [makeBooking()] }),
      'PATCH /api/v1/bookings/b1': json(200, makeBooking({ count: 20 })),
    });
    renderUi(<MyBookings />);
    const user = userEvent.setup();

    await screen.findByRole('table', { name: 'My bookings' });
    await user.click(screen.getByRole('button', { name: 'Edit Tuesday class' }));
    const dialog = await screen.findByRole('dialog', { name: 'Edit Tuesday class' });
    expect(dialog).toHaveTextContent('30 × 1/4 of A100-80GB for Optics.');
    const count = within(dialog).getByRole('textbox', { name: 'Sessions' });
    await user.clear(count);
    await user.type(count, '20');
    await user.click(within(dialog).getByRole('button', { name: 'Save booking' }));

    await waitFor(() => expect(api.callsTo('PATCH', '/api/v1/bookings/b1')).toHaveLength(1));
    expect(api.callsTo('PATCH', '/api/v1/bookings/b1')[0].body).toEqual({
      count: 20,
      starts_at: at(1, '10:00'),
      ends_at: at(1, '12:00'),
      weekly_until: null,
      once: true,
      title: 'Tuesday class',
      notice_minutes: 2,
    });
    expect(await screen.findByText('Saved Tuesday class.')).toBeInTheDocument();
  });
});
