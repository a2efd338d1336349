import { Anchor, Badge, Group, Select, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useWalletEntries } from '../api/hooks/wallets';
import type { EntryKind, EntryOut } from '../api/types';
import { Amount } from '../ui/Amount';
import { isNegative } from '../ui/amount';
import { formatDateTime } from '../ui/format';
import { PagedTable, type PagedColumn } from '../ui/PagedTable';
import { useTableState } from '../ui/tableState';
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

const NUMERIC = { whiteSpace: 'nowrap', fontVariantNumeric: 'tabular-nums' } as const;

// The server pages a wallet's entries newest first and filters by kind. A wallet can hold years
// of entries, so other orders are the browser's, over the whole history once every page is loaded.
const COLUMNS: PagedColumn<EntryOut>[] = [
  {
    id: 'at',
    header: 'Time',
    sortValue: (entry) => entry.at,
    cell: (entry) => formatDateTime(entry.at),
    td: { style: { whiteSpace: 'nowrap' } },
  },
  {
    id: 'kind',
    header: 'Kind',
    sortValue: (entry) => ENTRY_KIND_LABELS[entry.kind],
    cell: (entry) => (
      <Badge
        variant="light"
        color={ENTRY_KIND_COLORS[entry.kind]}
        style={{ overflow: 'visible' }}
        styles={{ label: { overflow: 'visible' } }}
      >
        {ENTRY_KIND_LABELS[entry.kind]}
      </Badge>
    ),
  },
  {
    id: 'counterparty',
    header: 'Counterparty',
    sortValue: (entry) => entry.counterparty_name,
    cell: (entry) => entry.counterparty_name ?? '—',
  },
  { id: 'memo', header: 'Memo', cell: (entry) => <MemoCell entry={entry} />, td: { maw: 320 } },
  {
    id: 'amount',
    header: 'Amount',
    sortValue: (entry) => Number(entry.amount),
    cell: (entry) => (
      <Text span inherit c={isNegative(entry.amount) ? 'red' : 'green'}>
        <Amount value={entry.amount} signed />
      </Text>
    ),
    td: { ta: 'right', style: NUMERIC },
  },
  { id: 'balance', header: 'Balance', cell: (entry) => <Amount value={entry.balance_after} />, td: { ta: 'right', style: NUMERIC } },
];

const NEWEST_FIRST = { id: 'at', desc: true };

/** A wallet's entries, newest first, each with the balance right after it. */
export function WalletHistory({ walletId }: { walletId: string }) {
  const view = useTableState({ prefix: 'history', sortable: ['at', 'kind', 'counterparty', 'amount'], filters: ['kind'] });
  const kind = ENTRY_KIND_OPTIONS.some((o) => o.value === view.filter('kind')) ? (view.filter('kind') as EntryKind) : null;
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
          onChange={(value) => view.setFilter('kind', value)}
          clearable
          w={200}
        />
      </Group>
      <PagedTable
        list={entries}
        columns={COLUMNS}
        rowKey={(entry) => String(entry.id)}
        state={view}
        defaultSort={NEWEST_FIRST}
        empty={
          kind
            ? `No ${ENTRY_KIND_LABELS[kind].toLowerCase()} entries.`
            : 'No credits yet. Entries appear here when credits arrive or are used.'
        }
        minWidth={720}
        striped
        verticalSpacing="xs"
        aria-label="History"
      />
    </Stack>
  );
}
