/** Bookings in words, the same on every screen: their windows, their repetition, their resources. */
import dayjs, { type Dayjs } from 'dayjs';
import type { BookingOut, CalendarResource, CalendarStep } from '../api/hooks/bookings';
import { countOf } from '../ui/format';

/** The Monday 00:00 (local time) that starts the week of `at`. */
export function weekOf(at: number | Dayjs): Dayjs {
  const day = dayjs(at).startOf('day');
  return day.subtract((day.day() + 6) % 7, 'day');
}

/** A window: "Tue 3 Mar 09:00–12:00", or with both dates when it ends another day. */
export function formatWindow(startsAt: string, endsAt: string): string {
  const start = dayjs(startsAt);
  const end = dayjs(endsAt);
  if (!start.isValid() || !end.isValid()) return `${startsAt} – ${endsAt}`;
  const from = start.format('ddd D MMM HH:mm');
  if (end.isSame(start, 'day')) return `${from}–${end.format('HH:mm')}`;
  if (end.isSame(start.add(1, 'day').startOf('day'))) return `${from}–24:00`;
  return `${from} – ${end.format('ddd D MMM HH:mm')}`;
}

/** "Weekly until 30 Jun 2026", or "Once". */
export function formatRepeat(booking: Pick<BookingOut, 'weekly_until'>): string {
  return booking.weekly_until ? `Weekly until ${dayjs(booking.weekly_until).format('D MMM YYYY')}` : 'Once';
}

/** "2 min notice", "No notice". */
export function formatNotice(minutes: number): string {
  return minutes === 0 ? 'No notice' : `${countOf(minutes, 'minute')} notice`;
}

/** What a booking holds: "30 × 1/4 of A100". */
export function formatWhat(booking: Pick<BookingOut, 'count' | 'tier_name' | 'model'>): string {
  return `${booking.count.toLocaleString()} × ${booking.tier_name} of ${booking.model}`;
}

/** Whether `now` lies in the booking's window now running. */
export function runningNow(booking: Pick<BookingOut, 'next_window' | 'status'>, now: number): boolean {
  const window = booking.next_window;
  if (booking.status !== 'active' || !window) return false;
  return dayjs(window[0]).valueOf() <= now && now < dayjs(window[1]).valueOf();
}

/** A resource's name: "Cards" (whole cards, which fraction tiers share), or "MIG 3g.40gb". */
export function resourceName(resource: Pick<CalendarResource, 'pool' | 'profile'>): string {
  return resource.pool === 'mig' ? `MIG ${resource.profile ?? ''}`.trim() : 'Cards';
}

/** How much of it exists now: "8 cards", "2 instances". */
export function resourceCapacity(resource: Pick<CalendarResource, 'unit' | 'capacity'>): string {
  return resource.unit === 'cards' ? countOf(resource.capacity, 'card') : countOf(resource.capacity, 'instance');
}

/** One step of a calendar within one day: its times there, and what is booked and free. */
export interface DayPart {
  from: string;
  to: string;
  wholeDay: boolean;
  booked: number;
  free: number;
}

/** The steps of a resource that fall within the local day starting at `dayStart`, cut to it. */
export function dayParts(steps: readonly CalendarStep[], dayStart: Dayjs): DayPart[] {
  const dayEnd = dayStart.add(1, 'day');
  const parts: DayPart[] = [];
  for (const step of steps) {
    const start = dayjs(step.starts_at);
    const end = dayjs(step.ends_at);
    if (!start.isBefore(dayEnd) || !end.isAfter(dayStart)) continue;
    const from = start.isAfter(dayStart) ? start : dayStart;
    const to = end.isBefore(dayEnd) ? end : dayEnd;
    parts.push({
      from: from.format('HH:mm'),
      to: to.isSame(dayEnd) ? '24:00' : to.format('HH:mm'),
      wholeDay: from.isSame(dayStart) && to.isSame(dayEnd),
      booked: step.booked,
      free: step.free,
    });
  }
  return parts;
}
