import { describe, expect, it } from 'vitest';
import { idleListSince, monthStart, periodOf, periodStarts } from './periods';

// Late on Nov 20 in UTC: already Nov 21 east of it, so only UTC days give these answers.
const NOW = new Date('2026-11-20T23:30:00Z');

describe('usage periods', () => {
  it('are UTC days, ending today or on the period’s last day, with a series period from their length', () => {
    expect(periodOf('this-month', NOW)).toEqual({ since: '2026-11-01', until: '2026-11-20', every: 'day' });
    expect(periodOf('last-month', NOW)).toEqual({ since: '2026-10-01', until: '2026-10-31', every: 'day' });
    expect(periodOf('last-3-months', NOW)).toEqual({ since: '2026-09-01', until: '2026-11-20', every: 'week' });
    expect(periodOf('last-12-months', NOW)).toEqual({ since: '2025-12-01', until: '2026-11-20', every: 'month' });
    expect(periodOf('last-month', new Date('2027-01-05T00:10:00Z'))).toEqual({
      since: '2026-12-01',
      until: '2026-12-31',
      every: 'day',
    });
    expect(monthStart(new Date('2026-12-01T00:10:00Z'))).toBe('2026-12-01');
  });

  it('list every period of a series as the server dates it: days, ISO weeks from Monday, months', () => {
    expect(periodStarts({ since: '2026-11-01', until: '2026-11-03', every: 'day' })).toEqual([
      '2026-11-01',
      '2026-11-02',
      '2026-11-03',
    ]);
    // 2026-09-01 is a Tuesday: its week started on Monday, August 31.
    const weeks = periodStarts(periodOf('last-3-months', NOW));
    expect(weeks[0]).toBe('2026-08-31');
    expect(weeks.at(-1)).toBe('2026-11-16');
    expect(weeks).toHaveLength(12);
    const months = periodStarts(periodOf('last-12-months', NOW));
    expect(months).toHaveLength(12);
    expect(months[0]).toBe('2025-12-01');
    expect(months.at(-1)).toBe('2026-11-01');
  });
});

describe('the idle list', () => {
  it('covers a short period whole and a long one in its last 93 days', () => {
    expect(idleListSince({ since: '2026-11-01', until: '2026-11-20' })).toBe('2026-11-01');
    expect(idleListSince({ since: '2025-12-01', until: '2026-11-20' })).toBe('2026-08-20');
  });
});
