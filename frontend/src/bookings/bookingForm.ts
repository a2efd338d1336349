/** What the booking form holds (for whom, what, when, how often, why), and the schema that says what it may hold. */
import type { FormErrors } from '@mantine/form';
import dayjs, { type Dayjs } from 'dayjs';
import { z } from 'zod';
import type { BookingEdit, BookingIn, BookingOut } from '../api/hooks/bookings';
import { asNumber, numberIn, textUpTo, validateWith } from '../ui/form';

// The server's bounds (capacity/schemas.py BookingIn, capacity/bookings.py): 1 to 10,000
// sessions, a title of 1 to 200 characters, 0 to 1,440 minutes' notice (2 unless set), a start
// from a minute ago, a window of at most 14 days (7 when weekly), repeating for at most a year.
export const LIMITS = {
  count: { min: 1, max: 10_000, integer: true },
  notice: { min: 0, max: 1440, integer: true, unit: 'minutes' },
  title: 200,
} as const;
export const DEFAULT_NOTICE = 2;
const GRACE_MS = 60_000;
const MAX_RECURRENCE_DAYS = 366;
const MAX_WINDOW_DAYS = 14;
const MAX_WEEKLY_WINDOW_DAYS = 7;

const DAY = 'YYYY-MM-DD';
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;

export type BookingValues = {
  group: string | null;
  model: string | null;
  tier: string | null;
  count: number | string;
  /** Start at the moment it is sent, rather than at `date` `from`. */
  startNow: boolean;
  /** The (first) window's day, `YYYY-MM-DD` in local time. */
  date: string;
  /** Its start and end, `HH:mm` local; without `endDate`, an end not after the start falls on the next day. */
  from: string;
  to: string;
  /** The day the window ends, `YYYY-MM-DD`, for a window of several days; '' for the same or the next day. */
  endDate: string;
  /** Repeat every week until this day (included), `YYYY-MM-DD`; '' for once. */
  weeklyUntil: string;
  title: string;
  notice: number | string;
};

/** A new booking: today, from the next full hour for an hour, once, with the usual notice. */
export function newBooking(now: number, defaults: Partial<BookingValues> = {}): BookingValues {
  const start = dayjs(now).add(1, 'hour').startOf('hour');
  return {
    group: null,
    model: null,
    tier: null,
    count: 1,
    startNow: false,
    date: start.format(DAY),
    from: start.format('HH:mm'),
    to: start.add(1, 'hour').format('HH:mm'),
    endDate: '',
    weeklyUntil: '',
    title: '',
    notice: DEFAULT_NOTICE,
    ...defaults,
  };
}

/** The form's values for a booking as it stands, to edit it. */
export function bookingValues(booking: BookingOut): BookingValues {
  const start = dayjs(booking.starts_at);
  const end = dayjs(booking.ends_at);
  // A window the same-or-next-day rule gives back needs no end day.
  const plain = windowOf({ startNow: false, date: start.format(DAY), from: start.format('HH:mm'), to: end.format('HH:mm'), endDate: '' }, 0);
  return {
    group: booking.group_id,
    model: booking.model,
    tier: booking.tier_id,
    count: booking.count,
    startNow: false,
    date: start.format(DAY),
    from: start.format('HH:mm'),
    to: end.format('HH:mm'),
    endDate: plain !== null && plain.end.isSame(end, 'minute') ? '' : end.format(DAY),
    weeklyUntil: booking.weekly_until ? dayjs(booking.weekly_until).format(DAY) : '',
    title: booking.title,
    notice: booking.notice_minutes,
  };
}

/**
 * The window the values name: starting now or on `date` at `from`, ending at `to` on `endDate`, or
 * without one on the start's day or the next.
 */
export function windowOf(
  values: Pick<BookingValues, 'startNow' | 'date' | 'from' | 'to' | 'endDate'>,
  now: number,
): { start: Dayjs; end: Dayjs } | null {
  if (!TIME.test(values.to) || (!values.startNow && (!TIME.test(values.from) || !DATE.test(values.date)))) return null;
  if (values.endDate && !DATE.test(values.endDate)) return null;
  const start = values.startNow ? dayjs(now) : dayjs(`${values.date}T${values.from}`);
  if (!start.isValid()) return null;
  if (values.endDate) {
    const end = dayjs(`${values.endDate}T${values.to}`);
    return end.isValid() ? { start, end } : null;
  }
  let end = dayjs(`${start.format(DAY)}T${values.to}`);
  if (!end.isAfter(start)) end = end.add(1, 'day');
  return { start, end };
}

/** Whether the window ends on the day after it starts, without an end day chosen (said beside the end time). */
export function endsNextDay(values: BookingValues, now: number): boolean {
  const window = windowOf(values, now);
  return !values.endDate && window !== null && !window.end.isSame(window.start, 'day');
}

/** The end of a `YYYY-MM-DD` day, local time: a window starting on it still repeats. */
function endOfDay(day: string): Dayjs {
  return dayjs(`${day}T00:00`).endOf('day');
}

export const bookingSchema = z.object({
  group: z.string({ error: 'Choose the group the capacity is for.' }),
  model: z.string({ error: 'Choose a GPU model.' }),
  tier: z.string({ error: 'Choose what to book.' }),
  count: numberIn(LIMITS.count),
  title: textUpTo(LIMITS.title, { required: true, label: 'A title' }),
  notice: numberIn(LIMITS.notice),
});
const fieldErrors = validateWith(bookingSchema);

/** What is wrong with the window the values name, at `now`, field by field. */
function windowErrors(values: BookingValues, now: number): FormErrors {
  const errors: FormErrors = {};
  if (!values.startNow) {
    if (!DATE.test(values.date) || !dayjs(values.date).isValid()) errors.date = 'Choose a day.';
    if (!TIME.test(values.from)) errors.from = 'Enter a time such as 09:30.';
  }
  if (!TIME.test(values.to)) errors.to = 'Enter a time such as 11:00.';
  if (values.endDate && (!DATE.test(values.endDate) || !dayjs(values.endDate).isValid())) errors.endDate = 'Choose a day.';
  const window = windowOf(values, now);
  if (window === null) return errors;
  if (!values.startNow && window.start.valueOf() < now - GRACE_MS) errors.from = 'Choose now or a later time.';
  const longest = values.weeklyUntil ? MAX_WEEKLY_WINDOW_DAYS : MAX_WINDOW_DAYS;
  if (!window.end.isAfter(window.start)) {
    errors.to = 'Choose an end after the start.';
  } else if (window.end.isAfter(window.start.add(longest, 'day'))) {
    errors.endDate = values.weeklyUntil
      ? `A weekly window lasts at most ${MAX_WEEKLY_WINDOW_DAYS} days.`
      : `A window lasts at most ${MAX_WINDOW_DAYS} days.`;
  }
  if (values.weeklyUntil) {
    const until = endOfDay(values.weeklyUntil);
    if (!until.isValid() || !until.isAfter(window.start.endOf('day'))) {
      errors.weeklyUntil = 'Choose a day after the first one.';
    } else if (until.isAfter(window.start.add(MAX_RECURRENCE_DAYS, 'day'))) {
      errors.weeklyUntil = 'Choose a day at most a year after the first one.';
    }
  }
  return errors;
}

/** Every field's problem, the window's checked against `now` (passed in, so no clock is read here). */
export function bookingErrors(values: BookingValues, now: number): FormErrors {
  return { ...fieldErrors(values), ...windowErrors(values, now) };
}

/** `validate` for the form, checked against the clock at the moment of checking: a dialog may stay open a while. */
export const validateBooking = (values: BookingValues) => bookingErrors(values, Date.now());

/** The server's request field paths, as the form's fields. */
export const BOOKING_FIELDS: Record<string, keyof BookingValues> = {
  group_id: 'group',
  tier_id: 'tier',
  count: 'count',
  starts_at: 'from',
  ends_at: 'to',
  weekly_until: 'weeklyUntil',
  title: 'title',
  notice_minutes: 'notice',
};

function instants(values: BookingValues, now: number) {
  const window = windowOf(values, now);
  if (window === null) throw new Error('the form is checked before it is sent');
  return {
    starts_at: window.start.toISOString(),
    ends_at: window.end.toISOString(),
    weekly_until: values.weeklyUntil ? endOfDay(values.weeklyUntil).toISOString() : null,
  };
}

/** The request for a new booking, from checked values; a start "now" is `now`. */
export function bookingRequest(values: BookingValues, now: number): BookingIn {
  return {
    group_id: values.group ?? '',
    tier_id: values.tier ?? '',
    count: asNumber(values.count),
    ...instants(values, now),
    title: values.title.trim(),
    notice_minutes: asNumber(values.notice),
  };
}

/** The change to a booking: every field as the form holds it; no repetition drops the weekly one. */
export function bookingEdit(values: BookingValues, now: number): BookingEdit {
  const { weekly_until, ...window } = instants(values, now);
  return {
    count: asNumber(values.count),
    ...window,
    weekly_until,
    once: weekly_until === null,
    title: values.title.trim(),
    notice_minutes: asNumber(values.notice),
  };
}

// What a check needs: the title and the notice change nothing in whether a booking fits.
const UNCHECKED = new Set(['title', 'notice']);

/**
 * What to ask the server's check about, or null while something that decides whether the booking
 * fits is missing or wrong (its field says what).
 */
export function checkRequest(values: BookingValues, now: number): BookingIn | null {
  const errors = bookingErrors(values, now);
  if (Object.keys(errors).some((field) => !UNCHECKED.has(field))) return null;
  return {
    ...bookingRequest(values, now),
    title: errors.title ? 'Check' : values.title.trim(),
    notice_minutes: errors.notice ? DEFAULT_NOTICE : asNumber(values.notice),
  };
}
