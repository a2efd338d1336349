import '@mantine/charts/styles.css';
import { BarChart, LineChart } from '@mantine/charts';
import { Box } from '@mantine/core';
import { useMemo } from 'react';
import type { UsageReportOut } from '../api/types';
import { hours, idleShares, percent, stackedHours } from './report';

const HEIGHT = 260;

/** GPU-hours per period, stacked by key (the top keys, the rest as "Others"). */
export function GpuHoursChart({ report, keyName }: { report: UsageReportOut; keyName: string }) {
  const { series, data } = useMemo(() => stackedHours(report), [report]);
  const others = series.some((s) => s.name === 'others') ? ', the rest summed as Others' : '';
  return (
    <Box
      role="img"
      aria-label={`GPU-hours per ${report.every}, stacked by ${keyName}${others}; the table below lists each ${keyName}'s total.`}
    >
      <BarChart
        h={HEIGHT}
        data={data}
        dataKey="period"
        type="stacked"
        series={series}
        valueFormatter={(value) => hours.format(value)}
        withLegend
        legendProps={{ verticalAlign: 'bottom' }}
        // One labelled image, with the table as its words: nothing in it takes the focus.
        barChartProps={{ accessibilityLayer: false }}
      />
    </Box>
  );
}

/** The share of GPU-hours held idle, per period. */
export function IdleShareChart({ report }: { report: UsageReportOut }) {
  const data = useMemo(() => idleShares(report), [report]);
  const overall = report.totals.idle_share;
  return (
    <Box
      role="img"
      aria-label={`Share of GPU-hours held idle per ${report.every}${
        overall === null ? '' : `; ${percent.format(overall)} over the whole period`
      }.`}
    >
      <LineChart
        h={180}
        data={data}
        dataKey="period"
        series={[{ name: 'idle', label: 'Idle share', color: 'orange.6' }]}
        yAxisProps={{ domain: [0, 1], tickFormatter: (value: number) => percent.format(value) }}
        valueFormatter={(value) => percent.format(value)}
        curveType="linear"
        withDots={data.length <= 31}
        lineChartProps={{ accessibilityLayer: false }}
        referenceLines={
          overall === null ? [] : [{ y: overall, label: `Whole period ${percent.format(overall)}`, color: 'gray.6' }]
        }
      />
    </Box>
  );
}
