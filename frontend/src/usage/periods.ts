import dayjs from 'dayjs';
import isoWeek from 'dayjs/plugin/isoWeek';
import utc from 'dayjs/plugin/utc';
import type { UsageEvery } from '../api/types';
import { formatDay } from '../ui/format';

dayjs.extend(utc);
dayjs.extend(isoWeek);

// Usage counts whole UTC days, `until` included: every day here is a UTC calendar day.
const DAY = 'YYYY-MM-DD';

export type PeriodChoice = 'this-month' | 'last-month' | 'last-3-months' | 'last-12-months';

export const PERIOD_CHOICES: { value: PeriodChoice; label: string }[] = [
  { value: 'this-month', label: 'This month' },
  { value: 'last-month', label: 'Last month' },
  { value: 'last-3-months', label: 'Last 3 months' },
  { value: 'last-12-months', label: 'Last 12 months' },
];

export const DEFAULT_PERIOD: PeriodChoice = 'this-month';

export function isPeriodChoice(value: string): value is PeriodChoice {
  return PERIOD_CHOICES.some((choice) => choice.value === value);
}

export interface UsagePeriod {
  /** The first UTC day, `YYYY-MM-DD`. */
  since: string;
  /** The last UTC day, included. */
  until: string;
  /** The series' period, from the length: a day for a month, a week for a quarter, else a month. */
  every: Exclude<UsageEvery, 'none'>;
}

/** The first day of the current UTC month. */
export function monthStart(now: Date = new Date()): string {
  return dayjs.utc(now).startOf('month').format(DAY);
}

/**
 * The UTC days a choice covers at `now`: the months end today, except last month, which ends
 * on its last day. The longer periods start on the first of a month so each month is whole.
 */
export function periodOf(choice: PeriodChoice, now: Date = new Date()): UsagePeriod {
  const today = dayjs.utc(now).startOf('day');
  const month = today.startOf('month');
  const span = (since: dayjs.Dayjs, until: dayjs.Dayjs): UsagePeriod => {
    const days = until.diff(since, 'day') + 1;
    return { since: since.format(DAY), until: until.format(DAY), every: days <= 31 ? 'day' : days <= 93 ? 'week' : 'month' };
  };
  if (choice === 'last-month') return span(month.subtract(1, 'month'), month.subtract(1, 'day'));
  if (choice === 'last-3-months') return span(month.subtract(2, 'month'), today);
  if (choice === 'last-12-months') return span(month.subtract(11, 'month'), today);
  return span(month, today);
}

/**
 * The start of every period of the series from `since` to `until`, as the server dates them:
 * each day, each ISO week's Monday, or each month's first day.
 */
export function periodStarts({ since, until, every }: UsagePeriod): string[] {
  const unit = every === 'week' ? 'isoWeek' : every;
  const last = dayjs.utc(until);
  const starts: string[] = [];
  for (let at = dayjs.utc(since).startOf(unit); !at.isAfter(last); at = at.add(1, every)) starts.push(at.format(DAY));
  return starts;
}

/** A period's start as the charts label it: "Nov 3" (a day, or the Monday of a week), "Nov 2026". */
export function periodLabel(start: string, every: UsageEvery): string {
  return every === 'month' ? formatDay(start, { month: 'short', year: 'numeric' }) : formatDay(start);
}

const RANGE = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

/** The days from `since` to `until` in the browser's locale, e.g. "Nov 1 – 20, 2026". */
export function formatSpan(since: string, until: string): string {
  return RANGE.formatRange(dayjs(since).toDate(), dayjs(until).toDate());
}

/** The most days the list of sessions that idled most covers (the server's bound, 93 days). */
export const IDLE_LIST_DAYS = 93;

/** The last IDLE_LIST_DAYS days of a period (all of it when shorter): where that list looks. */
export function idleListSince({ since, until }: Pick<UsagePeriod, 'since' | 'until'>): string {
  const earliest = dayjs.utc(until).subtract(IDLE_LIST_DAYS - 1, 'day').format(DAY);
  return since > earliest ? since : earliest;
}
