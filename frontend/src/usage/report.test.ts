import { describe, expect, it } from 'vitest';
import { CHART_KEYS, idleShares, stackedHours } from './report';
import { makePoint, makeReport, makeRow } from './testData';

describe('usage charts’ data', () => {
  it('stacks the keys that used most, sums the rest as Others, and keeps the periods nothing was used in', () => {
    const rows = Array.from({ length: CHART_KEYS + 2 }, (_, at) =>
      makeRow(`g${at}`, `Group ${at}`, [makePoint('2026-11-02', at + 1)]),
    );
    const { series, data } = stackedHours(makeReport({ since: '2026-11-01', until: '2026-11-03', rows }));
    expect(series.map((s) => s.label)).toEqual([...[9, 8, 7, 6, 5, 4, 3, 2].map((at) => `Group ${at}`), 'Others']);
    expect(data).toHaveLength(3);
    expect(data[0]).toMatchObject({ key0: 0, others: 0 });
    // The biggest first; the two smallest (1 and 2 GPU-hours) summed.
    expect(data[1]).toMatchObject({ key0: 10, key7: 3, others: 3 });
  });

  it('draws no Others when every key fits', () => {
    const rows = [makeRow('g1', 'Optics', [makePoint('2026-11-01', 2)]), makeRow('g2', null, [makePoint('2026-11-01', 5)])];
    const { series } = stackedHours(makeReport({ since: '2026-11-01', until: '2026-11-01', rows }));
    expect(series.map((s) => s.label)).toEqual(['g2', 'Optics']);
  });

  it('gives the idle share of each period over every key, none where no card was held', () => {
    const rows = [
      makeRow('g1', 'Optics', [makePoint('2026-11-01', 3, 1)]),
      makeRow('g2', 'Quiet', [makePoint('2026-11-01', 1, 1), makePoint('2026-11-03', 2, 0)]),
    ];
    const shares = idleShares(makeReport({ since: '2026-11-01', until: '2026-11-03', rows }));
    expect(shares.map((p) => p.idle)).toEqual([0.5, null, 0]);
  });
});
