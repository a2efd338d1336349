import { Badge, Code, Select, SimpleGrid, Spoiler, Stack, Table, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { useAudit, type AuditFilters } from '../../api/hooks/audit';
import type { AuditEntryOut, AuditOutcome } from '../../api/types';
import { formatDateTime, fromDateTimeInput } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { PageHeader } from '../../ui/PageHeader';
import { UserPicker } from '../users/UserPicker';

const OUTCOME_COLORS: Record<AuditOutcome, string> = { allowed: 'green', denied: 'orange', failed: 'red' };

const OUTCOME_OPTIONS = [
  { value: 'allowed', label: 'Allowed' },
  { value: 'denied', label: 'Denied' },
  { value: 'failed', label: 'Failed' },
];

function Target({ entry }: { entry: AuditEntryOut }) {
  if (!entry.target_type && !entry.target_id) return <>—</>;
  return (
    <>
      <Text size="sm">{entry.target_type}</Text>
      {entry.target_id && (
        <Text size="xs" c="dimmed" ff="monospace">
          {entry.target_id}
        </Text>
      )}
    </>
  );
}

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

export function AuditPage() {
  const [action, setAction] = useState('');
  const [outcome, setOutcome] = useState<AuditOutcome | null>(null);
  const [actorId, setActorId] = useState<string | null>(null);
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const [debouncedAction] = useDebouncedValue(action.trim(), 300);

  const filters: AuditFilters = {
    action: debouncedAction || undefined,
    outcome: outcome ?? undefined,
    actor_id: actorId ?? undefined,
    since: fromDateTimeInput(since),
    until: fromDateTimeInput(until),
  };
  const entries = useAudit(filters);
  const filtered = Object.values(filters).some(Boolean);

  return (
    <Stack gap="md" maw={1200}>
      <PageHeader title="Audit log" description="Who did what, and whether it was allowed." />
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 5 }}>
        <TextInput label="Action" placeholder="e.g. user.create" value={action} onChange={(e) => setAction(e.currentTarget.value)} />
        <Select
          label="Outcome"
          placeholder="Any"
          data={OUTCOME_OPTIONS}
          value={outcome}
          onChange={(value) => setOutcome(value as AuditOutcome | null)}
          clearable
        />
        <UserPicker label="Actor" value={actorId} onChange={setActorId} placeholder="Anyone" />
        <TextInput type="datetime-local" label="From" value={since} onChange={(e) => setSince(e.currentTarget.value)} />
        <TextInput type="datetime-local" label="To" value={until} onChange={(e) => setUntil(e.currentTarget.value)} />
      </SimpleGrid>
      <PagedTable
        list={entries}
        empty={filtered ? 'No audit entries match these filters.' : 'The audit log is empty.'}
        minWidth={800}
        striped
        verticalSpacing="xs"
        head={
          <>
            <Table.Th>Time</Table.Th>
            <Table.Th>Actor</Table.Th>
            <Table.Th>Action</Table.Th>
            <Table.Th>Target</Table.Th>
            <Table.Th>Outcome</Table.Th>
            <Table.Th>Detail</Table.Th>
          </>
        }
        row={(entry) => (
          <Table.Tr key={entry.id}>
            <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(entry.at)}</Table.Td>
            <Table.Td>{entry.actor_email ?? 'system'}</Table.Td>
            <Table.Td>
              <Code>{entry.action}</Code>
            </Table.Td>
            <Table.Td>
              <Target entry={entry} />
            </Table.Td>
            <Table.Td style={{ whiteSpace: 'nowrap' }}>
              <Badge variant="light" color={OUTCOME_COLORS[entry.outcome]} style={{ overflow: 'visible' }}>
                {entry.outcome}
              </Badge>
            </Table.Td>
            <Table.Td miw={200} maw={360}>
              <Detail detail={entry.detail} />
            </Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}
