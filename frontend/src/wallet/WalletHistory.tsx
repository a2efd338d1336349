import { Anchor, Badge, Group, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import { useWalletEntries } from '../api/hooks/wallets';
import type { EntryKind, EntryOut } from '../api/types';
import { formatAmount, formatSigned, isNegative } from '../ui/amount';
import { formatDateTime } from '../ui/format';
import { PagedTable } from '../ui/PagedTable';
import { ENTRY_KIND_COLORS, ENTRY_KIND_LABELS, ENTRY_KIND_OPTIONS } from './entryKinds';

function MemoCell({ entry }: { entry: EntryOut }) {
  if (!entry.memo && !entry.actor_email && !entry.session_id) return <>—</>;
  return (
    <>
      {entry.session_id && (
        <Text size="sm">
          Session{' '}
          <Anchor component={Link} to={`/sessions/${entry.session_id}`} size="sm">
            {entry.session_name || 'details'}
          </Anchor>
        </Text>
      )}
      {entry.memo && <Text size="sm">{entry.memo}</Text>}
      {entry.actor_email && (
        <Text size="xs" c="dimmed">
          by {entry.actor_email}
        </Text>
      )}
    </>
  );
}

/** A wallet's entries, newest first, each with the balance right after it. */
export function WalletHistory({ walletId }: { walletId: string }) {
  const [kind, setKind] = useState<EntryKind | null>(null);
  const entries = useWalletEntries(walletId, { kind: kind ?? undefined });

  return (
    <Stack gap="sm">
      <Group justify="space-between" align="flex-end">
        <Title order={3} size="h4">
          History
        </Title>
        <Select
          label="Kind"
          placeholder="All kinds"
          data={ENTRY_KIND_OPTIONS}
          value={kind}
          onChange={(value) => setKind(value as EntryKind | null)}
          clearable
          w={200}
        />
      </Group>
      <PagedTable
        list={entries}
        empty={
          kind
            ? `No ${ENTRY_KIND_LABELS[kind].toLowerCase()} entries.`
            : 'No credits yet. Entries appear here when credits arrive or are used.'
        }
        minWidth={720}
        striped
        verticalSpacing="xs"
        aria-label="History"
        head={
          <>
            <Table.Th>Time</Table.Th>
            <Table.Th>Kind</Table.Th>
            <Table.Th>Counterparty</Table.Th>
            <Table.Th>Memo</Table.Th>
            <Table.Th ta="right">Amount</Table.Th>
            <Table.Th ta="right">Balance</Table.Th>
          </>
        }
        row={(entry) => (
          <Table.Tr key={entry.id}>
            <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(entry.at)}</Table.Td>
            <Table.Td>
              <Badge
                variant="light"
                color={ENTRY_KIND_COLORS[entry.kind]}
                style={{ overflow: 'visible' }}
                styles={{ label: { overflow: 'visible' } }}
              >
                {ENTRY_KIND_LABELS[entry.kind]}
              </Badge>
            </Table.Td>
            <Table.Td>{entry.counterparty_name ?? '—'}</Table.Td>
            <Table.Td maw={320}>
              <MemoCell entry={entry} />
            </Table.Td>
            <Table.Td
              ta="right"
              c={isNegative(entry.amount) ? 'red.8' : 'green.8'}
              style={{ whiteSpace: 'nowrap', fontVariantNumeric: 'tabular-nums' }}
            >
              {formatSigned(entry.amount)}
            </Table.Td>
            <Table.Td ta="right" style={{ whiteSpace: 'nowrap', fontVariantNumeric: 'tabular-nums' }}>
              {formatAmount(entry.balance_after)}
            </Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}
