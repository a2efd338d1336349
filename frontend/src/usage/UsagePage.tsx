import { Button, Card, Group, Loader, Paper, SegmentedControl, Select, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { IconDownload } from '@tabler/icons-react';
import { lazy, Suspense, useMemo, type ReactNode } from 'react';
import { useIdleSessions, useUsage } from '../api/hooks/usage';
import type { PagedList } from '../api/paged';
import type { IdleSessionOut, UsageGrouping, UsageReportOut, UsageRowOut } from '../api/types';
import { useSession } from '../auth/session';
import { Amount } from '../ui/Amount';
import { formatMemoryGiB } from '../ui/format';
import { PageHeader } from '../ui/PageHeader';
import { PagedTable, type PagedColumn } from '../ui/PagedTable';
import { QueryState } from '../ui/QueryState';
import { useTableState } from '../ui/tableState';
import { DEFAULT_PERIOD, formatSpan, idleListSince, isPeriodChoice, PERIOD_CHOICES, periodOf } from './periods';
import { byGpuHours, hours, percent, rowName } from './report';

// The charts load when first drawn, not with the console.
const GpuHoursChart = lazy(() => import('./UsageReportCharts').then((module) => ({ default: module.GpuHoursChart })));
const IdleShareChart = lazy(() => import('./UsageReportCharts').then((module) => ({ default: module.IdleShareChart })));

interface Grouping {
  value: UsageGrouping;
  label: string;
  /** What one row is, in the table's header and the chart's description. */
  noun: string;
  /** People and tenants: only admins see anyone's use but their own, so only they are offered these. */
  admins?: boolean;
}

export const GROUPINGS: Grouping[] = [
  { value: 'group', label: 'By group', noun: 'group' },
  { value: 'user', label: 'By user', noun: 'user', admins: true },
  { value: 'organization', label: 'By organization', noun: 'organization', admins: true },
  { value: 'model', label: 'By model', noun: 'GPU model' },
  { value: 'tier', label: 'By tier', noun: 'tier' },
  { value: 'cluster', label: 'By cluster', noun: 'cluster' },
];
const DEFAULT_GROUPING: UsageGrouping = 'group';

const nounOf = (by: string) => GROUPINGS.find((g) => g.value === by)?.noun ?? 'key';
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

const NUMERIC = { ta: 'right', style: { whiteSpace: 'nowrap', fontVariantNumeric: 'tabular-nums' } } as const;
const ROW_SORTS = ['name', 'gpu', 'idle', 'share', 'credits', 'vram'] as const;
/** The page's choices, in the URL so a link or a reload shows the same report. */
const CHOICES = ['period', 'by'] as const;
const vram = (mib: number | null) => (mib === null ? '—' : formatMemoryGiB(mib));

/** Rows already in hand, as the list a PagedTable takes. */
function inHand<T>(items: T[], query: Pick<PagedList<T>, 'isPending' | 'error' | 'refetch'>): PagedList<T> {
  return { ...query, items, hasNextPage: false, isFetchingNextPage: false, fetchNextPage: () => undefined };
}
const settled = { isPending: false, error: null, refetch: () => undefined };

function rowColumns(by: string): PagedColumn<UsageRowOut>[] {
  return [
    { id: 'name', header: capitalized(nounOf(by)), cell: rowName, sortValue: rowName },
    {
      id: 'gpu',
      header: 'GPU-hours',
      cell: (r) => hours.format(r.totals.gpu_hours),
      sortValue: (r) => r.totals.gpu_hours,
      td: NUMERIC,
    },
    {
      id: 'idle',
      header: 'Idle GPU-hours',
      cell: (r) => hours.format(r.totals.idle_gpu_hours),
      sortValue: (r) => r.totals.idle_gpu_hours,
      td: NUMERIC,
    },
    {
      id: 'share',
      header: 'Idle share',
      cell: (r) => (r.totals.idle_share === null ? '—' : percent.format(r.totals.idle_share)),
      sortValue: (r) => r.totals.idle_share,
      td: NUMERIC,
    },
    // Sorting only orders rows; every amount shown is the server's decimal string.
    {
      id: 'credits',
      header: 'Credits',
      cell: (r) => <Amount value={r.totals.credits} />,
      sortValue: (r) => Number(r.totals.credits),
      td: NUMERIC,
    },
    {
      id: 'vram',
      header: 'Peak VRAM',
      cell: (r) => vram(r.totals.vram_peak_mib),
      sortValue: (r) => r.totals.vram_peak_mib,
      td: NUMERIC,
    },
  ];
}

const IDLE_COLUMNS: PagedColumn<IdleSessionOut>[] = [
  { id: 'session', header: 'Session', cell: (s) => s.session_name ?? 'Deleted session' },
  { id: 'owner', header: 'Owner', cell: (s) => s.owner_email },
  { id: 'group', header: 'Group', cell: (s) => s.group_name },
  { id: 'gpu', header: 'GPU', cell: (s) => `${s.model} · ${s.tier}` },
  { id: 'hours', header: 'GPU-hours', cell: (s) => hours.format(s.gpu_hours), td: NUMERIC },
  { id: 'idle', header: 'Idle GPU-hours', cell: (s) => hours.format(s.idle_gpu_hours), td: NUMERIC },
  { id: 'credits', header: 'Credits', cell: (s) => <Amount value={s.credits} />, td: NUMERIC },
  {
    id: 'vram',
    header: 'Peak VRAM',
    cell: (s) => `${vram(s.vram_peak_mib)} of ${formatMemoryGiB(s.vram_limit_mib)}`,
    td: NUMERIC,
  },
];

function Figure({ label, value, hint }: { label: string; value: ReactNode; hint: string }) {
  return (
    <Paper withBorder p="md" radius="md" role="group" aria-label={label}>
      <Text size="sm" c="dimmed">
        {label}
      </Text>
      <Text fz={28} fw={700} lh={1.2} style={{ fontVariantNumeric: 'tabular-nums' }}>
        {value}
      </Text>
      <Text size="xs" c="dimmed" mt={4}>
        {hint}
      </Text>
    </Paper>
  );
}

function Figures({ report }: { report: UsageReportOut }) {
  const { totals } = report;
  return (
    <SimpleGrid cols={{ base: 1, sm: 3 }}>
      <Figure
        label="GPU-hours"
        value={hours.format(totals.gpu_hours)}
        hint="Cards held, each by the share of it: a quarter card for an hour is 0.25."
      />
      <Figure
        label="Idle GPU-hours"
        value={hours.format(totals.idle_gpu_hours)}
        hint={
          totals.idle_share === null
            ? 'No card held.'
            : `${percent.format(totals.idle_share)} of the GPU-hours: the card was held but barely used.`
        }
      />
      <Figure label="Credits charged" value={<Amount value={totals.credits} />} hint="What the sessions were charged." />
    </SimpleGrid>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Card withBorder radius="md" component="section" aria-label={title}>
      <Title order={3} size="h5" mb="xs">
        {title}
      </Title>
      {children}
    </Card>
  );
}

function ReportView({ report }: { report: UsageReportOut }) {
  const table = useTableState({ sortable: ROW_SORTS });
  const noun = nounOf(report.by);
  const rows = useMemo(() => byGpuHours(report.rows), [report.rows]);
  const columns = useMemo(() => rowColumns(report.by), [report.by]);
  const chart = <Loader size="sm" aria-label="Loading the chart" />;
  return (
    <Stack gap="lg">
      <Figures report={report} />
      <Section title={`GPU-hours per ${noun}`}>
        <Suspense fallback={chart}>
          <GpuHoursChart report={report} keyName={noun} />
        </Suspense>
      </Section>
      <Section title="Idle share">
        <Suspense fallback={chart}>
          <IdleShareChart report={report} />
        </Suspense>
      </Section>
      <Section title={`Use by ${noun}`}>
        <PagedTable
          aria-label={`Use by ${noun}`}
          list={inHand(rows, settled)}
          columns={columns}
          rowKey={(row) => row.key ?? ''}
          state={table}
          defaultSort={{ id: 'gpu', desc: true }}
          empty="No GPU use in this period."
          minWidth={720}
        />
      </Section>
    </Stack>
  );
}

function IdleSessions({ since: periodSince, until }: { since: string; until: string }) {
  // The list reads hours, not days: it covers at most the period's last 93 days.
  const since = idleListSince({ since: periodSince, until });
  const idle = useIdleSessions(since, until);
  const items = useMemo(() => (idle.data?.items ?? []).filter((s) => s.idle_gpu_hours > 0), [idle.data]);
  return (
    <Section title={since === periodSince ? 'Sessions that idled most' : `Sessions that idled most, ${formatSpan(since, until)}`}>
      <PagedTable
        aria-label="Sessions that idled most"
        list={inHand(items, { isPending: idle.isPending, error: idle.error, refetch: () => void idle.refetch() })}
        columns={IDLE_COLUMNS}
        rowKey={(s) => s.session_id}
        empty="No session held a card idle in this period."
        minWidth={900}
      />
    </Section>
  );
}

/** GPU-hours, idle time and credits over a period, grouped as chosen, with the CSV to take away. */
export function UsagePage() {
  const { me, adminMode } = useSession();
  const state = useTableState({ sortable: [], filters: CHOICES });
  const groupings = GROUPINGS.filter((g) => adminMode || !g.admins);
  const periodParam = state.filter('period');
  const choice = isPeriodChoice(periodParam) ? periodParam : DEFAULT_PERIOD;
  const byParam = state.filter('by');
  const by = groupings.find((g) => g.value === byParam)?.value ?? DEFAULT_GROUPING;
  const period = useMemo(() => periodOf(choice), [choice]);
  const report = useUsage({ since: period.since, until: period.until, by, every: period.every });
  const csv = `/api/v1/usage.csv?${new URLSearchParams({ since: period.since, until: period.until, by, every: 'day' })}`;

  const whose = me.user.is_super_admin
    ? "Everyone's GPU-hours, idle time and credits."
    : adminMode
      ? 'GPU-hours, idle time and credits: your own, and those of the organizations and groups you administer.'
      : 'Your GPU-hours, idle time and credits.';
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Usage"
        description={whose}
        actions={
          <Button component="a" href={csv} download variant="light" leftSection={<IconDownload size={16} />}>
            Download CSV
          </Button>
        }
      />
      <Group align="flex-end" gap="md">
        <SegmentedControl
          aria-label="Period"
          value={choice}
          onChange={(value) => state.setFilter('period', value === DEFAULT_PERIOD ? null : value)}
          data={PERIOD_CHOICES}
        />
        <Select
          label="Grouping"
          value={by}
          onChange={(value) => state.setFilter('by', value === DEFAULT_GROUPING ? null : value)}
          data={groupings.map(({ value, label }) => ({ value, label }))}
          allowDeselect={false}
          w={200}
        />
      </Group>
      <Text size="sm" c="dimmed">
        {formatSpan(period.since, period.until)}, in UTC days, per {period.every}. Counted up to a few minutes ago.
      </Text>
      <QueryState query={report} isEmpty={report.data?.rows.length === 0} empty="No GPU use in this period.">
        {report.data && <ReportView report={report.data} />}
      </QueryState>
      <IdleSessions since={period.since} until={period.until} />
    </Stack>
  );
}
