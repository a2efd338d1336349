import { describe, expect, it } from 'vitest';
import { bookingEdit, bookingErrors, bookingRequest, bookingValues, checkRequest, newBooking, windowOf, type BookingValues } from './bookingForm';
import { makeBooking } from './testData';

// Monday 2 March 2026, 08:20 local time.
const NOW = new Date(2026, 2, 2, 8, 20).getTime();
const local = (day: number, hours: number, minutes = 0) => new Date(2026, 2, day, hours, minutes).toISOString();

const filled = (overrides: Partial<BookingValues> = {}): BookingValues => ({
  ...newBooking(NOW),
  group: 'g1',
  model: 'A100-80GB',
  tier: 't1',
  title: 'Tuesday class',
  ...overrides,
});
const errorsAt = (values: BookingValues, now = NOW) => bookingErrors(values, now);

describe('booking form', () => {
  it('starts at the next full hour, for an hour, once, with 2 minutes of notice', () => {
    expect(newBooking(NOW)).toMatchObject({ date: '2026-03-02', from: '09:00', to: '10:00', weeklyUntil: '', notice: 2, count: 1 });
  });

  it('ends on the next day when the end is not after the start, and starts now when asked', () => {
    const night = windowOf({ startNow: false, date: '2026-03-02', from: '22:00', to: '02:00', endDate: '' }, NOW)!;
    expect([night.start.toISOString(), night.end.toISOString()]).toEqual([local(2, 22), local(3, 2)]);
    const now = windowOf({ startNow: true, date: '', from: '', to: '09:20', endDate: '' }, NOW)!;
    expect([now.start.toISOString(), now.end.toISOString()]).toEqual([new Date(NOW).toISOString(), local(2, 9, 20)]);
    expect(windowOf({ startNow: false, date: '2026-03-02', from: '9', to: '10:00', endDate: '' }, NOW)).toBeNull();
  });

  it('spans several days when an end day is chosen, up to 14 (7 when weekly)', () => {
    // A paper deadline: four cards from Monday 09:00 to Friday 18:00.
    const week = bookingRequest(filled({ endDate: '2026-03-06', to: '18:00' }), NOW);
    expect([week.starts_at, week.ends_at]).toEqual([local(2, 9), local(6, 18)]);
    expect(errorsAt(filled({ endDate: '2026-03-06', to: '18:00' }))).toEqual({});
    expect(errorsAt(filled({ endDate: '2026-03-02', to: '08:00' }))).toEqual({ to: 'Choose an end after the start.' });
    expect(errorsAt(filled({ endDate: '2026-03-17' }))).toEqual({ endDate: 'A window lasts at most 14 days.' });
    expect(errorsAt(filled({ endDate: '2026-03-10', weeklyUntil: '2026-05-01' }))).toEqual({
      endDate: 'A weekly window lasts at most 7 days.',
    });
    expect(errorsAt(filled({ endDate: '2026-3-6' }))).toEqual({ endDate: 'Choose a day.' });
    // Edited, a booking keeps its end day only where the same-or-next-day rule would lose it.
    const long = makeBooking({ starts_at: local(2, 9), ends_at: local(6, 18) });
    expect(bookingValues(long)).toMatchObject({ date: '2026-03-02', from: '09:00', to: '18:00', endDate: '2026-03-06' });
    const night = makeBooking({ starts_at: local(2, 22), ends_at: local(3, 2) });
    expect(bookingValues(night)).toMatchObject({ to: '02:00', endDate: '' });
  });

  it('repeats weekly up to the end of the chosen day', () => {
    const body = bookingRequest(filled({ weeklyUntil: '2026-03-31' }), NOW);
    expect(body.weekly_until).toBe(new Date(2026, 2, 31, 23, 59, 59, 999).toISOString());
    expect(errorsAt(filled({ weeklyUntil: '2026-03-02' }))).toEqual({ weeklyUntil: 'Choose a day after the first one.' });
    expect(errorsAt(filled({ weeklyUntil: '2027-03-10' }))).toEqual({ weeklyUntil: 'Choose a day at most a year after the first one.' });
  });

  it('refuses what the server would, on the field it concerns', () => {
    expect(errorsAt(filled({ group: null, tier: null, count: 0, notice: 1441, title: ' ', from: '07:00' }))).toEqual({
      group: 'Choose the group the capacity is for.',
      tier: 'Choose what to book.',
      count: 'Enter a whole number from 1 to 10,000.',
      notice: 'Enter a whole number from 0 to 1,440 minutes.',
      title: 'A title is required.',
      from: 'Choose now or a later time.',
    });
    expect(errorsAt(filled({ from: '08:00' }))).toEqual({ from: 'Choose now or a later time.' });
    // A start in the minute now running is still now.
    expect(errorsAt(filled({ from: '08:20' }), NOW + 30_000)).toEqual({});
    expect(errorsAt(filled({ to: '25:00' }))).toEqual({ to: 'Enter a time such as 11:00.' });
  });

  it('checks what decides whether it fits, whatever the title and notice', () => {
    expect(checkRequest(filled({ tier: null }), NOW)).toBeNull();
    expect(checkRequest(filled({ title: '', notice: '' }), NOW)).toEqual({
      group_id: 'g1',
      tier_id: 't1',
      count: 1,
      starts_at: local(2, 9),
      ends_at: local(2, 10),
      weekly_until: null,
      title: 'Check',
      notice_minutes: 2,
    });
  });

  it('sends an edit whole, dropping the repetition when none is chosen', () => {
    const values = filled({ count: '12', notice: 5 });
    expect(errorsAt(values)).toEqual({});
    expect(bookingEdit(values, NOW)).toEqual({
      count: 12,
      starts_at: local(2, 9),
      ends_at: local(2, 10),
      weekly_until: null,
      once: true,
      title: 'Tuesday class',
      notice_minutes: 5,
    });
    expect(bookingEdit({ ...values, weeklyUntil: '2026-04-06' }, NOW)).toMatchObject({ once: false });
  });
});
