import dayjs from 'dayjs';
import { describe, expect, it } from 'vitest';
import { formatClock, formatCountdown, msUntil } from './countdown';

describe('countdowns', () => {
  it('count minutes and seconds, then hours, rounding the seconds up', () => {
    expect(formatCountdown(581_000)).toBe('9:41');
    expect(formatCountdown(580_001)).toBe('9:41');
    expect(formatCountdown(59_000)).toBe('0:59');
    expect(formatCountdown(1)).toBe('0:01');
    expect(formatCountdown(3_600_000)).toBe('1:00:00');
    expect(formatCountdown(3_600_000 + 9 * 60_000 + 41_000)).toBe('1:09:41');
    expect(formatCountdown(23 * 3_600_000 + 59 * 60_000 + 59_000)).toBe('23:59:59');
  });

  it('read 0:00 at and after the deadline, and say a day or more in words', () => {
    expect(formatCountdown(0)).toBe('0:00');
    expect(formatCountdown(-5_000)).toBe('0:00');
    expect(formatCountdown(Number.NaN)).toBe('0:00');
    expect(formatCountdown(26 * 3_600_000)).toBe('about 26 h');
  });

  it('give the clock time alone on the same day, with the date on another', () => {
    const now = dayjs('2026-11-30T10:00:00').valueOf();
    expect(formatClock(dayjs('2026-11-30T10:42:00').toISOString(), now)).toBe('10:42');
    expect(formatClock(dayjs('2026-12-03T08:05:00').toISOString(), now)).toBe('Thu 3 Dec 08:05');
    expect(formatClock('soon', now)).toBe('soon');
  });

  it('measure the time left from now', () => {
    const now = Date.parse('2026-11-30T12:00:19Z');
    expect(msUntil('2026-11-30T12:10:00Z', now)).toBe(581_000);
    expect(msUntil('2026-11-30T12:00:00Z', now)).toBe(-19_000);
  });
});
