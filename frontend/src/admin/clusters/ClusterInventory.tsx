import {
  Anchor,
  Group,
  Pagination,
  Paper,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useId, useMemo, useState, type ReactNode } from 'react';
import { useClusterCards } from '../../api/hooks/capacity';
import type { PagedList } from '../../api/paged';
import type { CardOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { PagedTable, type PagedColumn } from '../../ui/PagedTable';
import { QueryState } from '../../ui/QueryState';
import { useTableState } from '../../ui/tableState';
import { NodeCards } from './CardTile';
import {
  byModel,
  byNode,
  CARD_STATES,
  filterCards,
  nodeRuns,
  pageOf,
  parseState,
  sortRows,
  STATE_LABELS,
  SUMMARY_SORTS,
  tally,
  type CardFilter,
  type SummaryRow,
  type Tally,
} from './inventorySummary';

/** Cards drawn at once: a few nodes' worth, so a cluster of hundreds never draws them all. */
export const CARDS_PER_PAGE = 32;
/** Nodes listed in the summary before "Load more". */
const NODES_SHOWN = 10;
const FILTERS = ['model', 'node', 'state', 'q'] as const;
const NO_CARDS: CardOut[] = [];

const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0 });

function Stat({ label, value, hint }: { label: string; value: ReactNode; hint?: ReactNode }) {
  return (
    <Paper withBorder p="xs" radius="md" role="group" aria-label={label}>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600} style={{ fontVariantNumeric: 'tabular-nums' }}>
        {value}
      </Text>
      {hint && (
        <Text size="xs" c="dimmed">
          {hint}
        </Text>
      )}
    </Paper>
  );
}

function carvingText(carvings: Tally['carvings']): string {
  return carvings.map(([name, count]) => `${name} ×${count}`).join(' · ');
}

function Totals({ totals }: { totals: Tally }) {
  return (
    <SimpleGrid cols={{ base: 2, sm: 4, lg: 7 }} spacing="xs" role="group" aria-label="All cards of the cluster">
      <Stat label="Cards" value={totals.cards} />
      <Stat label="Idle" value={totals.idle} />
      <Stat label="Carved" value={totals.carved} hint={carvingText(totals.carvings) || undefined} />
      <Stat label="Free slots" value={totals.freeSlots} />
      <Stat label="Draining" value={totals.draining} />
      <Stat label="Unhealthy" value={totals.unhealthy} />
      <Stat label="Allocated" value={percent.format(totals.allocated)} />
    </SimpleGrid>
  );
}

const number = (value: number) => <span style={{ fontVariantNumeric: 'tabular-nums' }}>{value}</span>;

/**
 * The figures of a summary table. The name shows only that row's cards below; sorting, where
 * offered, covers every row: they are sorted here before being listed.
 */
function summaryColumns(
  name: string,
  show: (key: string) => void,
  sortable: boolean,
): PagedColumn<SummaryRow>[] {
  const right = { ta: 'right' } as const;
  const sort = (value: (row: SummaryRow) => number | string) => (sortable ? { sortValue: value, serverSort: true } : {});
  return [
    {
      id: 'key',
      header: name,
      cell: (row) => (
        <Anchor component="button" type="button" size="sm" onClick={() => show(row.key)} title={`Show the cards of ${row.key}`}>
          {row.key}
        </Anchor>
      ),
      ...sort((row) => row.key),
    },
    { id: 'cards', header: 'Cards', cell: (row) => number(row.cards), td: right, ...sort((row) => row.cards) },
    { id: 'idle', header: 'Idle', cell: (row) => number(row.idle), td: right, ...sort((row) => row.idle) },
    {
      id: 'carved',
      header: 'Carved',
      cell: (row) => (
        <>
          {number(row.carved)}
          {row.carvings.length > 0 && (
            <Text span size="xs" c="dimmed" ml={6}>
              {carvingText(row.carvings)}
            </Text>
          )}
        </>
      ),
      td: right,
      ...sort((row) => row.carved),
    },
    { id: 'freeSlots', header: 'Free slots', cell: (row) => number(row.freeSlots), td: right, ...sort((row) => row.freeSlots) },
    { id: 'draining', header: 'Draining', cell: (row) => number(row.draining), td: right, ...sort((row) => row.draining) },
    {
      id: 'unhealthy',
      header: 'Unhealthy',
      cell: (row) => (
        <Text span size="sm" c={row.unhealthy > 0 ? 'red' : undefined} fw={row.unhealthy > 0 ? 600 : undefined}>
          {number(row.unhealthy)}
        </Text>
      ),
      td: right,
      ...sort((row) => row.unhealthy),
    },
    {
      id: 'allocated',
      header: 'Allocated',
      cell: (row) => percent.format(row.allocated),
      td: right,
      ...sort((row) => row.allocated),
    },
  ];
}

/** Rows already in hand, as the list a PagedTable takes; "Load more" shows the next `step`. */
function useShownRows<T>(rows: T[], step: number): PagedList<T> {
  const [count, setCount] = useState(step);
  return {
    items: rows.slice(0, count),
    isPending: false,
    error: null,
    refetch: () => undefined,
    hasNextPage: rows.length > count,
    isFetchingNextPage: false,
    fetchNextPage: () => setCount((shown) => shown + step),
  };
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section aria-labelledby={id}>
      <Title order={4} size="h5" id={id} mb="xs">
        {title}
      </Title>
      {children}
    </section>
  );
}

function Filters({
  filter,
  models,
  nodes,
  set,
}: {
  filter: CardFilter;
  models: string[];
  nodes: string[];
  set: (name: (typeof FILTERS)[number], value: string | null) => void;
}) {
  // What is typed shows at once; the address, and so the picture, follow it a render later.
  const [text, setText] = useState(filter.text);
  return (
    <Group align="flex-end" gap="sm" role="search" aria-label="Filter cards">
      <Select
        label="Model"
        placeholder="All models"
        data={models}
        value={filter.model || null}
        onChange={(value) => set('model', value)}
        clearable
        w={240}
      />
      <Select
        label="Node"
        placeholder="All nodes"
        data={nodes}
        value={filter.node || null}
        onChange={(value) => set('node', value)}
        searchable
        clearable
        w={200}
      />
      <Stack gap={4}>
        <Text size="sm" fw={500} component="span">
          State
        </Text>
        <SegmentedControl
          aria-label="State"
          value={filter.state}
          onChange={(value) => set('state', value)}
          data={[{ value: '', label: 'All' }, ...CARD_STATES.map((state) => ({ value: state, label: STATE_LABELS[state] }))]}
        />
      </Stack>
      <TextInput
        label="Search"
        placeholder="Node or card UUID"
        leftSection={<IconSearch size={16} aria-hidden />}
        value={text}
        onChange={(event) => {
          setText(event.currentTarget.value);
          set('q', event.currentTarget.value);
        }}
        w={220}
      />
    </Group>
  );
}

/** The filtered cards, a page at a time, grouped by node. */
function Picture({ cards, total, filterKey, canManage }: { cards: CardOut[]; total: number; filterKey: string; canManage: boolean }) {
  // The page belongs to the filter it was chosen under: a new filter starts on its first page.
  const [paging, setPaging] = useState({ filterKey, page: 1 });
  const asked = paging.filterKey === filterKey ? paging.page : 1;
  const { cards: page, page: current, pages } = pageOf(cards, asked, CARDS_PER_PAGE);
  const perNode = useMemo(() => {
    const counts = new Map<string, number>();
    for (const card of cards) counts.set(card.node, (counts.get(card.node) ?? 0) + 1);
    return counts;
  }, [cards]);

  const matched = cards.length === total ? `${total} cards` : `${cards.length} of ${total} cards match`;
  const from = (current - 1) * CARDS_PER_PAGE + 1;
  const range = pages > 1 ? ` · showing ${from}–${from + page.length - 1}` : '';
  return (
    <Stack gap="md">
      <Group justify="space-between" gap="sm">
        <Text size="sm" role="status">
          {matched}
          {range}
        </Text>
        {pages > 1 && (
          <nav aria-label="Card pages">
            <Pagination
              size="sm"
              total={pages}
              value={current}
              onChange={(next) => setPaging({ filterKey, page: next })}
              getItemProps={(item) => ({ 'aria-label': `Page ${item}` })}
              getControlProps={(control) => ({ 'aria-label': `${control[0].toUpperCase()}${control.slice(1)} page` })}
            />
          </nav>
        )}
      </Group>
      {cards.length === 0 ? (
        <Text size="sm" c="dimmed">
          No cards match these filters.
        </Text>
      ) : (
        nodeRuns(page).map(([node, list]) => (
          <NodeCards key={node} node={node} cards={list} of={perNode.get(node) ?? list.length} canManage={canManage} />
        ))
      )}
    </Stack>
  );
}

function InventoryView({ cards, canManage }: { cards: CardOut[]; canManage: boolean }) {
  const table = useTableState({ sortable: [], filters: FILTERS });
  const nodeTable = useTableState({ prefix: 'nodes', sortable: SUMMARY_SORTS });
  const { setFilter } = table;
  const [model, node, state, text] = FILTERS.map((name) => table.filter(name));
  const filter = useMemo<CardFilter>(
    () => ({ model, node, state: parseState(state), text }),
    [model, node, state, text],
  );
  const filterKey = JSON.stringify(filter);

  const totals = useMemo(() => tally(cards), [cards]);
  const models = useMemo(() => byModel(cards), [cards]);
  const nodes = useMemo(() => byNode(cards), [cards]);
  const sortedNodes = useMemo(() => sortRows(nodes, nodeTable.sort), [nodes, nodeTable.sort]);
  const nodeList = useShownRows(sortedNodes, NODES_SHOWN);
  const shown = useMemo(() => filterCards(cards, filter), [cards, filter]);

  const modelColumns = useMemo(() => summaryColumns('GPU model', (key) => setFilter('model', key), false), [setFilter]);
  const nodeColumns = useMemo(() => summaryColumns('Node', (key) => setFilter('node', key), true), [setFilter]);

  return (
    <Stack gap="lg">
      <Section title="Summary">
        <Stack gap="md">
          <Totals totals={totals} />
          <PagedTable
            aria-label="Cards by GPU model"
            list={{ ...nodeList, items: models, hasNextPage: false }}
            columns={modelColumns}
            rowKey={(row) => row.key}
            empty="No cards."
            minWidth={760}
          />
          <PagedTable
            aria-label="Cards by node"
            list={nodeList}
            columns={nodeColumns}
            rowKey={(row) => row.key}
            state={nodeTable}
            defaultSort={{ id: 'key', desc: false }}
            empty="No nodes."
            minWidth={760}
          />
        </Stack>
      </Section>
      <Section title="Cards">
        <Stack gap="md">
          <Filters
            filter={filter}
            models={models.map((row) => row.key)}
            nodes={nodes.map((row) => row.key)}
            set={setFilter}
          />
          <Picture cards={shown} total={cards.length} filterKey={filterKey} canManage={canManage} />
        </Stack>
      </Section>
    </Stack>
  );
}

/** A cluster's cards: the figures per model and per node, and the filtered picture of who holds what. */
export function ClusterInventory({ clusterId }: { clusterId: string }) {
  const { can } = useSession();
  const cards = useClusterCards(clusterId);
  const items = cards.data?.items ?? NO_CARDS;
  return (
    <Stack gap="md">
      <Title order={3} size="h4">
        Inventory
      </Title>
      <QueryState query={cards} isEmpty={items.length === 0} empty="This cluster has not reported any cards yet.">
        <InventoryView cards={items} canManage={can('capacity.manage')} />
      </QueryState>
    </Stack>
  );
}
