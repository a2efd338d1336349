/**
 * How long a wallet lasts at the rate its running sessions are billed now (pure). It counts the
 * balance: what is held is reserved for those very sessions and is spent by them. A session is
 * paused when its next hold window cannot be reserved, so the pause may come up to one window
 * before the time this gives.
 */
import type { SessionOut } from '../api/hooks/sessions';
import { fromMicros, toMicros } from '../ui/amount';

export interface Runway {
  /** Credits an hour across the sessions billed now, as an exact amount. */
  burnPerHour: string;
  /** Hours the available credits last at that rate; null when nothing is billed. */
  hours: number | null;
  /** When they run out at that rate; null when nothing is billed or no date can say it. */
  until: Date | null;
}

export function runway(
  balance: string,
  sessions: readonly Pick<SessionOut, 'billing' | 'price_per_hour'>[],
  now: Date,
): Runway {
  const burn = sessions.filter((s) => s.billing).reduce((sum, s) => sum + toMicros(s.price_per_hour), 0n);
  if (burn <= 0n) return { burnPerHour: '0', hours: null, until: null };
  const left = toMicros(balance);
  const hours = left <= 0n ? 0 : Number(left) / Number(burn);
  const until = new Date(now.getTime() + hours * 3_600_000);
  // Far beyond any calendar (a tiny price): no date to name.
  return { burnPerHour: fromMicros(burn), hours, until: Number.isFinite(until.getTime()) ? until : null };
}
