export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleDateString();
}

/** `YYYY-MM-DD` in local time, as a date input expects. */
export function toDateInput(iso: string | null | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** End of the chosen local day, so "expires on" includes that whole day. */
export function fromDateInput(value: string): string | null {
  if (!value) return null;
  const date = new Date(`${value}T23:59:59`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** A `datetime-local` input value as an ISO instant. */
export function fromDateTimeInput(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** A calendar day `YYYY-MM-DD`, read as that local day (not as UTC midnight). */
export function formatDay(day: string, options: Intl.DateTimeFormatOptions = { month: 'short', day: 'numeric' }): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!match) return day;
  return new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3])).toLocaleDateString(undefined, options);
}

/** A calendar month `YYYY-MM`, e.g. "November 2026". */
export function formatPeriod(period: string): string {
  const match = /^(\d{4})-(\d{2})$/.exec(period);
  if (!match) return period;
  return new Date(Number(match[1]), Number(match[2]) - 1, 1).toLocaleDateString(undefined, { month: 'long', year: 'numeric' });
}

const RELATIVE_UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
];

/** How long ago (or from now) an instant is, e.g. "5 minutes ago"; `fallback` when there is none. */
export function formatRelative(iso: string | null | undefined, fallback = '—', now = Date.now()): string {
  if (!iso) return fallback;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const seconds = Math.round((date.getTime() - now) / 1000);
  if (Math.abs(seconds) < 45) return 'just now';
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  for (const [unit, size] of RELATIVE_UNITS) {
    if (Math.abs(seconds) >= size) return format.format(Math.round(seconds / size), unit);
  }
  return format.format(seconds < 0 ? -1 : 1, 'minute');
}

/** Memory given in MiB, shown in GiB with at most one decimal, e.g. "79.6 GiB". */
export function formatMemoryGiB(mib: number): string {
  const gib = mib / 1024;
  return `${gib.toLocaleString(undefined, { maximumFractionDigits: 1 })} GiB`;
}

const WHOLE = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });

/**
 * A length of time in seconds, as the console says every duration (waits, runways, hours a
 * wallet lasts): "under a minute", "about 12 min", "about 2 h 5 min", "about 1,000 h".
 */
export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 60) return 'under a minute';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `about ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  if (hours >= 24) return `about ${WHOLE.format(Math.round(minutes / 60))} h`;
  return rest ? `about ${hours} h ${rest} min` : `about ${hours} h`;
}

/** An instant within the coming week as weekday and time ("Thu 14:00"), later ones with the date. */
export function formatUntil(when: Date, now = new Date()): string {
  const days = (when.getTime() - now.getTime()) / 86_400_000;
  const options: Intl.DateTimeFormatOptions =
    days < 6
      ? { weekday: 'short', hour: '2-digit', minute: '2-digit' }
      : { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' };
  return new Intl.DateTimeFormat(undefined, options).format(when);
}

const PLURAL = new Intl.PluralRules('en');
const COUNT = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/**
 * A count with its noun in the right form, the number in the browser's locale: "1 card",
 * "1,024 cards", "0.5 cores". `other` defaults to `one` + "s". The words are English, so the
 * plural rules are English's too.
 */
export function countOf(count: number, one: string, other = `${one}s`): string {
  return `${COUNT.format(count)} ${PLURAL.select(count) === 'one' ? one : other}`;
}
