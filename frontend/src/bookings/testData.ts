import dayjs from 'dayjs';
import type { BookingOut, CalendarOut, CalendarResource } from '../api/hooks/bookings';
import { GROUP_ID } from '../sessions/testData';

/** Monday 2 March 2026, 00:00 in the browser's own time zone: the week the tests look at. */
export const WEEK = dayjs(new Date(2026, 2, 2));
/** An instant of that week, local time: `at(1, '09:00')` is Tuesday 09:00. */
export const at = (day: number, time: string) => {
  const [hours, minutes] = time.split(':').map(Number);
  return WEEK.add(day, 'day').hour(hours).minute(minutes).toISOString();
};

/** Thirty quarter-cards on Tuesdays 10:00 to 12:00, for Optics, which the caller manages. */
export function makeBooking(overrides: Partial<BookingOut> = {}): BookingOut {
  return {
    id: 'b1',
    group_id: GROUP_ID,
    group_name: 'Optics',
    tier_id: 't1',
    tier_name: '1/4',
    model: 'A100-80GB',
    count: 30,
    starts_at: at(1, '10:00'),
    ends_at: at(1, '12:00'),
    weekly_until: null,
    title: 'Tuesday class',
    notice_minutes: 2,
    status: 'active',
    created_at: '2026-02-20T10:00:00Z',
    updated_at: '2026-02-20T10:00:00Z',
    cancelled_at: null,
    next_window: [at(1, '10:00'), at(1, '12:00')],
    can_manage: true,
    ...overrides,
  };
}

/** The week's steps of one resource: `booked` from `from` to `to` on `day`, nothing booked around it. */
export function makeResource(
  overrides: Partial<CalendarResource> = {},
  booked?: { day: number; from: string; to: string; count: number },
): CalendarResource {
  const capacity = overrides.capacity ?? 8;
  const start = WEEK.toISOString();
  const end = WEEK.add(7, 'day').toISOString();
  const steps = booked
    ? [
        { starts_at: start, ends_at: at(booked.day, booked.from), booked: 0, free: capacity },
        { starts_at: at(booked.day, booked.from), ends_at: at(booked.day, booked.to), booked: booked.count, free: capacity - booked.count },
        { starts_at: at(booked.day, booked.to), ends_at: end, booked: 0, free: capacity },
      ]
    : [{ starts_at: start, ends_at: end, booked: 0, free: capacity }];
  return { pool: 'hami-core', profile: null, unit: 'cards', capacity, steps, ...overrides };
}

export function makeCalendar(resources: CalendarResource[]): CalendarOut {
  return { model: 'A100-80GB', starts_at: WEEK.toISOString(), ends_at: WEEK.add(7, 'day').toISOString(), resources };
}
