import type { UsageEvery, UsageReportOut, UsageRowOut } from '../api/types';
import { periodLabel, periodStarts } from './periods';

/** Hours as the usage screens write them: "41.25", "0.5". */
export const hours = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
/** A share as a whole percent: "12%". */
export const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0 });

/** The keys the stacked chart draws one by one; the rest are summed as "Others" so it stays readable. */
export const CHART_KEYS = 8;
const COLORS = ['blue.6', 'teal.6', 'grape.6', 'orange.6', 'cyan.6', 'pink.6', 'lime.7', 'indigo.6'];

/** What a row is called: its name, else its key (a model, a tier). */
export function rowName(row: UsageRowOut): string {
  return row.name ?? row.key ?? 'All use';
}

/** The rows, most GPU-hours first. */
export function byGpuHours(rows: UsageRowOut[]): UsageRowOut[] {
  return [...rows].sort((a, b) => b.totals.gpu_hours - a.totals.gpu_hours);
}

export interface ChartSeries {
  name: string;
  label: string;
  color: string;
}

/** One point per period: its label, then a value per series. */
export type ChartPoint = Record<string, string | number | null>;

function everyOf(report: UsageReportOut): Exclude<UsageEvery, 'none'> {
  return report.every === 'week' || report.every === 'month' ? report.every : 'day';
}

/**
 * Every period of the report, with none used too, so the charts keep time's even steps; any
 * period the server dated otherwise is kept.
 */
function periods(report: UsageReportOut): string[] {
  const given = report.rows.flatMap((row) => row.series.map((point) => point.period_start));
  const all = new Set([...periodStarts({ since: report.since, until: report.until, every: everyOf(report) }), ...given]);
  return [...all].sort();
}

/**
 * GPU-hours per period, a series per key: the `CHART_KEYS` keys that used most, the rest
 * summed as "Others". Heights are floats that only draw: the figures come from the server.
 */
export function stackedHours(report: UsageReportOut): { series: ChartSeries[]; data: ChartPoint[] } {
  const every = everyOf(report);
  const starts = periods(report);
  const index = new Map(starts.map((start, at) => [start, at]));
  const rows = byGpuHours(report.rows);
  const top = rows.slice(0, CHART_KEYS);
  const rest = rows.slice(CHART_KEYS);
  const series = top.map((row, at) => ({ name: `key${at}`, label: rowName(row), color: COLORS[at] }));
  if (rest.length) series.push({ name: 'others', label: 'Others', color: 'gray.5' });

  const data: ChartPoint[] = starts.map((start) => {
    const point: ChartPoint = { period: periodLabel(start, every) };
    for (const { name } of series) point[name] = 0;
    return point;
  });
  rows.forEach((row, at) => {
    const name = at < CHART_KEYS ? `key${at}` : 'others';
    for (const { period_start, gpu_hours } of row.series) {
      const point = data[index.get(period_start) ?? -1];
      if (point) point[name] = (point[name] as number) + gpu_hours;
    }
  });
  return { series, data };
}

/** The share of GPU-hours spent idle in each period, over every key; null where none were held. */
export function idleShares(report: UsageReportOut): ChartPoint[] {
  const every = everyOf(report);
  const held = new Map<string, number>();
  const idle = new Map<string, number>();
  for (const row of report.rows) {
    for (const point of row.series) {
      held.set(point.period_start, (held.get(point.period_start) ?? 0) + point.gpu_hours);
      idle.set(point.period_start, (idle.get(point.period_start) ?? 0) + point.idle_gpu_hours);
    }
  }
  return periods(report).map((start) => {
    const gpu = held.get(start) ?? 0;
    return { period: periodLabel(start, every), idle: gpu > 0 ? (idle.get(start) ?? 0) / gpu : null };
  });
}
