/**
 * Time left until a deadline (a notice's pause, a drain's end), said the same way on every
 * screen: a ticking "9:41" while under a day, the clock time it falls at ("10:42").
 */
import dayjs from 'dayjs';
import duration from 'dayjs/plugin/duration';
import { useEffect, useState } from 'react';
import { formatDuration } from '../ui/format';

dayjs.extend(duration);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * What is left of `ms` milliseconds as a countdown: "9:41", "1:09:41"; whole seconds rounded
 * up, so it reads "0:00" at the deadline and not a second before. A day or more is said in
 * words ("about 26 h"), as every other duration is.
 */
export function formatCountdown(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) return '0:00';
  const seconds = Math.ceil(ms / 1000);
  if (seconds * 1000 >= DAY) return formatDuration(seconds);
  return dayjs.duration(seconds, 'seconds').format(seconds * 1000 >= HOUR ? 'H:mm:ss' : 'm:ss');
}

/** The wall-clock time of `iso`: "10:42" on the day of `now`, "Thu 3 Dec 10:42" another day. */
export function formatClock(iso: string, now = Date.now()): string {
  const when = dayjs(iso);
  if (!when.isValid()) return iso;
  return when.format(when.isSame(dayjs(now), 'day') ? 'HH:mm' : 'ddd D MMM HH:mm');
}

/** The milliseconds from `now` until `iso`; negative once it has passed, NaN when it is no instant. */
export function msUntil(iso: string, now: number): number {
  return dayjs(iso).valueOf() - now;
}

/** The current time, read again every `everyMs` while `active`: a screen that counts down re-renders. */
export function useNow(active = true, everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return undefined;
    setNow(Date.now());
    const timer = window.setInterval(() => setNow(Date.now()), everyMs);
    return () => window.clearInterval(timer);
  }, [active, everyMs]);
  return now;
}

/** A deadline as it is shown: time left (ticking each second until it passes) and its clock time. */
export function useCountdown(iso: string): { left: number; countdown: string; clock: string } {
  const [passed, setPassed] = useState(false);
  const now = useNow(!passed);
  const left = msUntil(iso, now);
  const over = !(left > 0);
  useEffect(() => setPassed(over), [over]);
  return { left, countdown: formatCountdown(left), clock: formatClock(iso, now) };
}
