import { Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import dayjs from 'dayjs';
import { useId, useMemo, useState } from 'react';
import { useClusterCards } from '../../api/hooks/capacity';
import type { CardOut } from '../../api/types';
import { Countdown } from '../../queue/Countdown';
import { formatClock } from '../../queue/countdown';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { countOf, formatDateTime } from '../../ui/format';
import { notifyDone } from '../../ui/notify';
import { QueryState } from '../../ui/QueryState';
import { HardwareErrorBadge } from './clusterParts';
import { DrainModal } from './DrainModal';
import { useActiveDrains, useFinishDrain, type DrainOut } from './drains';

const NO_CARDS: CardOut[] = [];

/** "the whole cluster", "node gpu-1", "card GPU-…" (by UUID where the card is known). */
function drained(drain: DrainOut, uuids: Map<string, string>): string {
  if (drain.scope === 'node') return `node ${drain.node}`;
  if (drain.scope === 'card') return `card ${uuids.get(drain.card_id ?? '') ?? drain.card_id?.slice(0, 8)}`;
  return 'the whole cluster';
}

function Progress({ drain }: { drain: DrainOut }) {
  return (
    <Stack gap={2}>
      <Text size="sm">
        {countOf(drain.cards, 'card')} · {countOf(drain.sessions_left, 'session')} left
      </Text>
      <Text size="xs" c="dimmed">
        {drain.sessions_left === 0 ? (
          'Nothing runs on it: ready for maintenance.'
        ) : drain.next_deadline ? (
          <>
            Next pause at{' '}
            <time dateTime={drain.next_deadline} title={formatDateTime(drain.next_deadline)}>
              {formatClock(drain.next_deadline)}
            </time>
          </>
        ) : (
          'No session has been paused yet.'
        )}
      </Text>
    </Stack>
  );
}

function DrainActions({ drain, what }: { drain: DrainOut; what: string }) {
  const finish = useFinishDrain();
  return (
    <Group gap="xs" wrap="nowrap">
      <ConfirmButton
        color="blue"
        label="End"
        aria-label={`End the drain of ${what}`}
        title="End drain"
        message={`Is the maintenance done? ${what[0].toUpperCase()}${what.slice(1)} takes sessions again. Sessions already paused resume by themselves.`}
        confirmLabel="End drain"
        onConfirm={async () => {
          await finish.mutateAsync({ drainId: drain.id, how: 'end' });
          notifyDone(`The drain of ${what} has ended.`);
        }}
      />
      <ConfirmButton
        label="Cancel"
        aria-label={`Cancel the drain of ${what}`}
        title="Cancel drain"
        message={`Call off the drain of ${what}? It takes sessions again, and the sessions still running on it are no longer paused.`}
        confirmLabel="Cancel drain"
        onConfirm={async () => {
          await finish.mutateAsync({ drainId: drain.id, how: 'cancel' });
          notifyDone(`The drain of ${what} was called off.`);
        }}
      />
    </Group>
  );
}

function DrainRow({ drain, uuids, canManage }: { drain: DrainOut; uuids: Map<string, string>; canManage: boolean }) {
  const what = drained(drain, uuids);
  return (
    <Table.Tr>
      <Table.Td>
        <Text size="sm" ff={drain.scope === 'cluster' ? undefined : 'monospace'} style={{ wordBreak: 'break-all' }}>
          {what[0].toUpperCase()}
          {what.slice(1)}
        </Text>
      </Table.Td>
      <Table.Td>
        <Group gap="xs" wrap="nowrap" align="flex-start">
          {drain.source === 'xid' && <HardwareErrorBadge />}
          <Text size="sm">{drain.reason}</Text>
        </Group>
        <Text size="xs" c="dimmed">
          Since {formatDateTime(drain.created_at)}
        </Text>
      </Table.Td>
      <Table.Td>
        Sessions paused <Countdown deadline={drain.deadline} passed="already" />
      </Table.Td>
      <Table.Td>
        <Progress drain={drain} />
      </Table.Td>
      {canManage && (
        <Table.Td>
          <DrainActions drain={drain} what={what} />
        </Table.Td>
      )}
    </Table.Tr>
  );
}

/**
 * The cluster's active drains, with how far each has got (sessions left, the next pause), and
 * for capacity admins the means to start, end or call off one.
 */
export function DrainsSection({ clusterId, clusterName, canManage }: { clusterId: string; clusterName: string; canManage: boolean }) {
  const headingId = useId();
  const [adding, setAdding] = useState(false);
  const drains = useActiveDrains();
  const cards = useClusterCards(clusterId);
  const cardList = cards.data?.items ?? NO_CARDS;
  const uuids = useMemo(() => new Map(cardList.map((card) => [card.id, card.uuid])), [cardList]);
  const items = useMemo(
    () =>
      (drains.data?.items ?? [])
        .filter((drain) => drain.cluster_id === clusterId)
        .sort((a, b) => dayjs(a.deadline).diff(b.deadline)),
    [drains.data, clusterId],
  );
  return (
    <section aria-labelledby={headingId}>
      <Group justify="space-between" mb="xs">
        <Title order={3} size="h4" id={headingId}>
          Drains
        </Title>
        {canManage && (
          <Button size="xs" onClick={() => setAdding(true)}>
            Drain…
          </Button>
        )}
      </Group>
      <QueryState query={drains} isEmpty={items.length === 0} empty="Nothing is drained: every card takes sessions.">
        <Table.ScrollContainer minWidth={900}>
          <Table striped aria-label="Drains">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Drained</Table.Th>
                <Table.Th>Reason</Table.Th>
                <Table.Th>Deadline</Table.Th>
                <Table.Th>Progress</Table.Th>
                {canManage && <Table.Th aria-label="Actions" />}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((drain) => (
                <DrainRow key={drain.id} drain={drain} uuids={uuids} canManage={canManage} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </QueryState>
      {canManage && (
        <DrainModal
          clusterId={clusterId}
          clusterName={clusterName}
          cards={cardList}
          opened={adding}
          onClose={() => setAdding(false)}
        />
      )}
    </section>
  );
}
