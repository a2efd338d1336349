import { describe, expect, it } from 'vitest';
import { runway } from './runway';

const NOW = new Date('2026-12-03T10:00:00Z');

describe('runway', () => {
  it('divides what is available by what the billed sessions cost an hour', () => {
    const r = runway('50', [
      { billing: true, price_per_hour: '1.5' },
      { billing: true, price_per_hour: '0.5' },
      { billing: false, price_per_hour: '8' }, // paused or queued: not billed
    ], NOW);
    expect(r.burnPerHour).toBe('2');
    expect(r.hours).toBe(25);
    expect(r.until).toEqual(new Date('2026-12-04T11:00:00Z'));
  });

  it('says nothing runs out while nothing is billed', () => {
    expect(runway('50', [{ billing: false, price_per_hour: '2' }], NOW)).toEqual({ burnPerHour: '0', hours: null, until: null });
    expect(runway('50', [{ billing: true, price_per_hour: '0' }], NOW).hours).toBeNull();
  });

  it('names no date beyond what a calendar can hold', () => {
    const r = runway('2400', [{ billing: true, price_per_hour: '0.000001' }], NOW);
    expect(r.hours).toBe(2.4e9);
    expect(r.until).toBeNull();
  });

  it('is over at once for an empty or overdrawn wallet, and exact in millionths', () => {
    expect(runway('0', [{ billing: true, price_per_hour: '2' }], NOW).hours).toBe(0);
    expect(runway('-1', [{ billing: true, price_per_hour: '2' }], NOW).until).toEqual(NOW);
    expect(runway('0.000001', [{ billing: true, price_per_hour: '0.000003' }], NOW).hours).toBeCloseTo(1 / 3, 12);
  });
});
