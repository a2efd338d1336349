import type { IdleSessionOut, UsageFiguresOut, UsagePeriodOut, UsageReportOut, UsageRowOut } from '../api/types';

export function makeFigures(overrides: Partial<UsageFiguresOut> = {}): UsageFiguresOut {
  return {
    gpu_hours: 0,
    idle_gpu_hours: 0,
    idle_share: null,
    session_hours: 0,
    measured_hours: 0,
    credits: '0',
    vram_peak_mib: null,
    ...overrides,
  };
}

export function makePoint(period_start: string, gpu_hours: number, idle_gpu_hours = 0): UsagePeriodOut {
  return {
    ...makeFigures({ gpu_hours, idle_gpu_hours, idle_share: gpu_hours ? idle_gpu_hours / gpu_hours : null }),
    period_start,
  };
}

/** A row whose totals are its series' sums. */
export function makeRow(
  key: string,
  name: string | null,
  series: UsagePeriodOut[],
  overrides: Partial<UsageFiguresOut> = {},
): UsageRowOut {
  const gpu = series.reduce((sum, p) => sum + p.gpu_hours, 0);
  const idle = series.reduce((sum, p) => sum + p.idle_gpu_hours, 0);
  return {
    key,
    name,
    totals: makeFigures({ gpu_hours: gpu, idle_gpu_hours: idle, idle_share: gpu ? idle / gpu : null, ...overrides }),
    series,
  };
}

export function makeReport(overrides: Partial<UsageReportOut> = {}): UsageReportOut {
  return {
    since: '2026-11-01',
    until: '2026-11-20',
    by: 'group',
    every: 'day',
    totals: makeFigures(),
    rows: [],
    ...overrides,
  };
}

export function makeIdleSession(overrides: Partial<IdleSessionOut> = {}): IdleSessionOut {
  return {
    session_id: '00000000-0000-4000-8000-00000000e001',
    session_name: 'notebook',
    owner_email: 'ada@example.org',
    group_name: 'Optics',
    model: 'A100-80GB',
    tier: '1/4',
    gpu_hours: 10,
    idle_gpu_hours: 4.5,
    credits: '25',
    vram_peak_mib: 3174,
    vram_limit_mib: 20480,
    ...overrides,
  };
}
