import { Badge, Code, Select, SimpleGrid, Spoiler, Stack, Text, TextInput } from '@mantine/core';
import { DateTimePicker } from '@mantine/dates';
import { useDebouncedValue } from '@mantine/hooks';
import dayjs from 'dayjs';
import { useState } from 'react';
import { useAudit, type AuditFilters } from '../../api/hooks/audit';
import type { AuditEntryOut, AuditOutcome } from '../../api/types';
import { formatDateTime } from '../../ui/format';
import { PagedTable, type PagedColumn } from '../../ui/PagedTable';
import { PageHeader } from '../../ui/PageHeader';
import { useTableState } from '../../ui/tableState';
import { UserPicker } from '../users/UserPicker';

const OUTCOME_COLORS: Record<AuditOutcome, string> = { allowed: 'green', denied: 'orange', failed: 'red' };

const OUTCOME_OPTIONS = [
  { value: 'allowed', label: 'Allowed' },
  { value: 'denied', label: 'Denied' },
  { value: 'failed', label: 'Failed' },
];

/** Who acted: today's name, else the email kept on the entry (a failed sign-in's is the email typed). */
function Actor({ entry }: { entry: AuditEntryOut }) {
  if (!entry.actor_id && !entry.actor_email) return <Text size="sm">system</Text>;
  const name = entry.actor_name ?? entry.actor_email;
  return (
    <div title={entry.actor_id ?? 'Not signed in'}>
      <Text size="sm">{name}</Text>
      {entry.actor_name && entry.actor_email && (
        <Text size="xs" c="dimmed">
          {entry.actor_email}
        </Text>
      )}
      {!entry.actor_id && (
        <Text size="xs" c="dimmed">
          not signed in
        </Text>
      )}
    </div>
  );
}

/** What was acted on: its name where it still has one, its id on hover. */
function Target({ entry }: { entry: AuditEntryOut }) {
  if (!entry.target_type && !entry.target_id) return <>—</>;
  const recorded = typeof entry.detail.name === 'string' ? entry.detail.name : null;
  const name = entry.target_name ?? recorded;
  const email = entry.target_email && entry.target_email !== name ? entry.target_email : null;
  return (
    <div title={entry.target_id ?? undefined}>
      <Text size="sm">
        <Text span inherit c="dimmed">
          {entry.target_type}
        </Text>{' '}
        {name ?? (entry.target_id && !isId(entry.target_id) ? entry.target_id : null)}
      </Text>
      {email && (
        <Text size="xs" c="dimmed">
          {email}
        </Text>
      )}
      {!name && entry.target_id && isId(entry.target_id) && (
        <Text size="xs" c="dimmed" ff="monospace">
          {entry.target_type === 'org' || entry.target_type === 'group' ? 'deleted · ' : ''}
          {entry.target_id.slice(0, 8)}
        </Text>
      )}
    </div>
  );
}

const isId = (value: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(value);

/** A picker's local wall time as the UTC instant the server filters by, and back. */
const toInstant = (value: string | null) => (value && dayjs(value).isValid() ? dayjs(value).toISOString() : '');
const fromInstant = (iso: string) => (iso && dayjs(iso).isValid() ? dayjs(iso).format('YYYY-MM-DD HH:mm:ss') : null);

function Detail({ detail }: { detail: AuditEntryOut['detail'] }) {
  const entries = Object.entries(detail);
  if (entries.length === 0) return <>—</>;
  return (
    <Spoiler maxHeight={54} showLabel="More" hideLabel="Less">
      {entries.map(([key, value]) => (
        <Text key={key} size="xs" ff="monospace" style={{ wordBreak: 'break-word' }}>
          <Text span inherit c="dimmed">
            {key}:
          </Text>{' '}
          {typeof value === 'string' ? value : JSON.stringify(value)}
        </Text>
      ))}
    </Spoiler>
  );
}

// The log is paged by the server, newest first; it sorts by time itself (`sort`), over every
// page. No other column sorts: an order over the entries loaded so far would mislead.
const COLUMNS: PagedColumn<AuditEntryOut>[] = [
  {
    id: 'at',
    header: 'Time',
    serverSort: true,
    cell: (entry) => formatDateTime(entry.at),
    td: { style: { whiteSpace: 'nowrap' } },
  },
  { id: 'actor', header: 'Actor', cell: (entry) => <Actor entry={entry} /> },
  { id: 'action', header: 'Action', cell: (entry) => <Code>{entry.action}</Code> },
  { id: 'target', header: 'Target', cell: (entry) => <Target entry={entry} /> },
  {
    id: 'outcome',
    header: 'Outcome',
    cell: (entry) => (
      <Badge variant="light" color={OUTCOME_COLORS[entry.outcome]} style={{ overflow: 'visible' }}>
        {entry.outcome}
      </Badge>
    ),
    td: { style: { whiteSpace: 'nowrap' } },
  },
  { id: 'detail', header: 'Detail', cell: (entry) => <Detail detail={entry.detail} />, td: { miw: 200, maw: 360 } },
];

const FILTERS = ['action', 'outcome', 'actor', 'since', 'until'] as const;
const NEWEST_FIRST = { id: 'at', desc: true };

export function AuditPage() {
  const view = useTableState({ sortable: ['at'], filters: FILTERS });
  const [action, setAction] = useState(view.filter('action'));
  const [debouncedAction] = useDebouncedValue(action.trim(), 300);
  const outcome = OUTCOME_OPTIONS.some((o) => o.value === view.filter('outcome'))
    ? (view.filter('outcome') as AuditOutcome)
    : null;
  const actorId = view.filter('actor') || null;
  const since = fromInstant(view.filter('since'));
  const until = fromInstant(view.filter('until'));

  const filters: AuditFilters = {
    action: debouncedAction || undefined,
    outcome: outcome ?? undefined,
    actor_id: actorId ?? undefined,
    since: since ? toInstant(since) : undefined,
    until: until ? toInstant(until) : undefined,
  };
  const filtered = Object.values(filters).some(Boolean);
  const entries = useAudit({ ...filters, sort: view.sort && !view.sort.desc ? 'at' : undefined });

  return (
    <Stack gap="md" maw={1200}>
      <PageHeader title="Audit log" description="Who did what, and whether it was allowed." />
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 5 }}>
        <TextInput
          label="Action"
          placeholder="e.g. user.create"
          value={action}
          maxLength={80}
          onChange={(e) => {
            setAction(e.currentTarget.value);
            view.setFilter('action', e.currentTarget.value.trim());
          }}
        />
        <Select
          label="Outcome"
          placeholder="Any"
          data={OUTCOME_OPTIONS}
          value={outcome}
          onChange={(value) => view.setFilter('outcome', value)}
          clearable
        />
        <UserPicker label="Actor" value={actorId} onChange={(value) => view.setFilter('actor', value)} placeholder="Anyone" />
        <DateTimePicker
          label="From"
          placeholder="Any time"
          value={since}
          onChange={(value) => view.setFilter('since', toInstant(value))}
          clearable
          withSeconds={false}
          maxDate={until ?? undefined}
        />
        <DateTimePicker
          label="To"
          placeholder="Now"
          value={until}
          onChange={(value) => view.setFilter('until', toInstant(value))}
          clearable
          withSeconds={false}
          minDate={since ?? undefined}
        />
      </SimpleGrid>
      <PagedTable
        list={entries}
        columns={COLUMNS}
        rowKey={(entry) => String(entry.id)}
        state={view}
        defaultSort={NEWEST_FIRST}
        empty={filtered ? 'No audit entries match these filters.' : 'The audit log is empty.'}
        minWidth={800}
        striped
        verticalSpacing="xs"
        aria-label="Audit log"
      />
    </Stack>
  );
}
