import '@mantine/charts/styles.css';
import { AreaChart, LineChart } from '@mantine/charts';
import { Box, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useSessionUsage, type SessionOut, type SessionUsageOut } from '../api/hooks/sessions';
import { formatCredits, fromMicros, toMicros } from '../ui/amount';
import type { ReactNode } from 'react';
import { formatDateTime, formatMemoryGiB } from '../ui/format';
import { QueryState } from '../ui/QueryState';

const HEIGHT = 160;
const DAY_MS = 86_400_000;

/** Axis ticks: the time of day over a short span, the date over a longer one. */
function tickFormatter(spanMs: number) {
  const options: Intl.DateTimeFormatOptions =
    spanMs > 2 * DAY_MS ? { month: 'short', day: 'numeric' } : { hour: '2-digit', minute: '2-digit' };
  const format = new Intl.DateTimeFormat(undefined, options);
  // Recharts may hand a formatter something that is no time (a label it has not placed yet);
  // a Date from it would throw and take the page down.
  return (value: unknown) => (isTime(value) ? format.format(new Date(value)) : '');
}

const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** A time axis from `since` to `until`, with ticks and tooltips in local time. */
export function timeAxis(since: string, until: string) {
  const from = new Date(since).getTime();
  const to = new Date(until).getTime();
  return {
    xAxisProps: {
      type: 'number' as const,
      scale: 'time' as const,
      domain: [from, Math.max(to, from + 1)],
      tickFormatter: tickFormatter(to - from),
    },
    tooltipProps: {
      labelFormatter: (value: unknown) => (isTime(value) ? formatDateTime(new Date(value).toISOString()) : ''),
    },
  };
}

function Chart({ title, label, children }: { title: string; label: string; children: ReactNode }) {
  return (
    <Stack gap={4}>
      <Text size="sm" fw={600}>
        {title}
      </Text>
      <Box role="img" aria-label={label}>
        {children}
      </Box>
    </Stack>
  );
}

function Current({ usage }: { usage: SessionUsageOut }) {
  const now = usage.current;
  if (!now) return null;
  const vram = now.vram_used_mib === null ? null : formatMemoryGiB(now.vram_used_mib);
  const limit = usage.vram_limit_mib === null ? null : formatMemoryGiB(usage.vram_limit_mib);
  return (
    <Text size="sm" c="dimmed">
      Now: {now.gpu_util_percent === null ? 'utilization unknown' : `${Math.round(now.gpu_util_percent)} % GPU`}
      {vram && `, ${vram}${limit ? ` of ${limit}` : ''} VRAM`}, reported {formatDateTime(now.at)}
    </Text>
  );
}

/** The drawings, once the answer is in. Heights are floats that only draw; figures shown as text come from the server. */
function Charts({ usage }: { usage: SessionUsageOut }) {
  const axis = timeAxis(usage.since, usage.until);
  const points = usage.points.map((point) => ({
    t: new Date(point.at).getTime(),
    util: point.gpu_util_percent,
    vram: point.vram_used_mib,
  }));
  const cost = usage.cost.map((point) => ({ t: new Date(point.at).getTime(), credits: Number(toMicros(point.cost)) / 1e6 }));
  const limit = usage.vram_limit_mib;
  const vramMax = Math.max(limit ?? 0, ...points.map((point) => point.vram ?? 0));
  const gib = (mib: number) => formatMemoryGiB(mib);
  const credits = (value: number) => formatCredits(fromMicros(BigInt(Math.round(value * 1e6))));
  return (
    <SimpleGrid cols={{ base: 1, md: 3 }}>
      <Chart title="GPU utilization" label="GPU utilization over the session's life, in percent">
        {points.length === 0 ? (
          <Text size="sm" c="dimmed">
            No GPU use reported yet.
          </Text>
        ) : (
          <LineChart
            h={HEIGHT}
            data={points}
            dataKey="t"
            series={[{ name: 'util', label: 'GPU utilization', color: 'blue.6' }]}
            yAxisProps={{ domain: [0, 100] }}
            valueFormatter={(value) => `${Math.round(value)} %`}
            withDots={points.length < 3}
            connectNulls={false}
            {...axis}
          />
        )}
      </Chart>
      <Chart
        title="VRAM used"
        label={`VRAM used over the session's life${limit === null ? '' : `, against the tier's ${gib(limit)}`}`}
      >
        {points.length === 0 ? (
          <Text size="sm" c="dimmed">
            No VRAM use reported yet.
          </Text>
        ) : (
          <LineChart
            h={HEIGHT}
            data={points}
            dataKey="t"
            series={[{ name: 'vram', label: 'VRAM used (peak)', color: 'grape.6' }]}
            yAxisProps={{ domain: [0, vramMax || 1], tickFormatter: gib }}
            valueFormatter={gib}
            referenceLines={limit === null ? [] : [{ y: limit, label: `Tier limit ${gib(limit)}`, color: 'red.6' }]}
            withDots={points.length < 3}
            connectNulls={false}
            {...axis}
          />
        )}
      </Chart>
      <Chart title="Cost so far" label={`Credits captured over the session's life: ${formatCredits(usage.cost_total)} so far`}>
        <AreaChart
          h={HEIGHT}
          data={cost}
          dataKey="t"
          series={[{ name: 'credits', label: 'Cost so far', color: 'teal.6' }]}
          curveType="stepAfter"
          valueFormatter={credits}
          withDots={false}
          {...axis}
        />
      </Chart>
    </SimpleGrid>
  );
}

/** A session's GPU utilization, VRAM against its tier's limit, and cost, over its life. */
export function UsageCharts({ session }: { session: SessionOut }) {
  const running = session.state === 'starting' || session.state === 'running';
  const usage = useSessionUsage(session.id, running);
  const data = usage.data;
  return (
    <Card withBorder radius="md" padding="md" component="section" aria-label="Use over time">
      <Group justify="space-between" align="baseline" mb="xs">
        <Title order={3} size="h5">
          Use over time
        </Title>
        {data && (
          <Text size="sm" c="dimmed">
            {formatCredits(data.cost_total)} so far
          </Text>
        )}
      </Group>
      <QueryState
        query={usage}
        isEmpty={Boolean(data && data.points.length === 0 && toMicros(data.cost_total) === 0n)}
        empty="Nothing used yet: charts appear once the session holds a card and its cluster reports its use."
      >
        {data && (
          <Stack gap="sm">
            <Current usage={data} />
            <Charts usage={data} />
          </Stack>
        )}
      </QueryState>
    </Card>
  );
}
