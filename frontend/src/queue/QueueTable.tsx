import { Badge, Group, Stack, Table, Text, Tooltip } from '@mantine/core';
import { useCancelRequest, useQueue } from '../api/hooks/capacity';
import type { HeldForBookingOut, PriorityOut, QueueItemOut, QueueStatus, StartOut } from '../api/types';
import { ConfirmButton } from '../ui/ConfirmButton';
import { formatDateTime, formatDuration } from '../ui/format';
import { QueryState } from '../ui/QueryState';
import { formatClock, useNow } from './countdown';

const STATUS: Record<QueueStatus, { label: string; color: string }> = {
  queued: { label: 'Queued', color: 'blue' },
  admitted: { label: 'Admitted', color: 'green' },
  cancelled: { label: 'Cancelled', color: 'gray' },
  insufficient_credits: { label: 'Insufficient credits', color: 'orange' },
  dropped: { label: 'Dropped', color: 'red' },
  refused: { label: 'Refused', color: 'red' },
};

/** A wait in seconds as every duration is said (`formatDuration`). */
export const formatWait = formatDuration;

/** A start forecast in words: "likely around 14:20, almost surely before 15:05", and where the
 * first forecast differs by a minute or more, "(first said 13:50)". */
export function startInWords(start: StartOut, now = Date.now()): string {
  if (!start.likely_at) return 'not within the next 7 days, as things stand';
  const likely = formatClock(start.likely_at, now);
  const parts = [`likely around ${likely}`];
  if (start.surely_by && start.surely_by !== start.likely_at) {
    parts.push(`almost surely before ${formatClock(start.surely_by, now)}`);
  } else if (!start.surely_by) {
    parts.push('possibly much later');
  }
  const first = start.first_likely_at ? formatClock(start.first_likely_at, now) : null;
  const moved = first && first !== likely ? ` (first said ${first})` : '';
  return `${parts.join(', ')}${moved}`;
}

/** The estimated start of a queued request: the forecast when there is one, else the wait. */
export function StartEstimate({ start, waitSeconds }: { start?: StartOut | null; waitSeconds: number | null }) {
  const now = useNow(true, 60_000);
  if (!start) return <>{formatWait(waitSeconds)}</>;
  return <>{startInWords(start, now)}</>;
}

const number = (value: number) => value.toLocaleString(undefined, { maximumFractionDigits: 3 });

function Priority({ priority }: { priority: PriorityOut }) {
  return (
    <Group gap={6} wrap="nowrap">
      <Text size="sm" fw={600} style={{ fontVariantNumeric: 'tabular-nums' }}>
        {number(priority.value)}
      </Text>
      {priority.starving && (
        <Badge size="xs" color="red" variant="light">
          starving
        </Badge>
      )}
    </Group>
  );
}

function PriorityParts({ priority }: { priority: PriorityOut }) {
  return (
    <Text size="xs" c="dimmed" style={{ fontVariantNumeric: 'tabular-nums', whiteSpace: 'nowrap' }}>
      wait bonus {number(priority.wait_bonus)} · user usage {number(priority.user_usage)} · group usage{' '}
      {number(priority.group_usage)} · weight {number(priority.weight)}
      <br />
      organization&apos;s turn {number(priority.org_value)}: usage {number(priority.org_usage)} · weight{' '}
      {number(priority.org_weight)}
    </Text>
  );
}

/** A card is being freed for a queued request, by preemption: the time it should start by. */
function CardFreed({ at, admin }: { at: string; admin: boolean }) {
  const now = useNow(true, 60_000);
  return (
    <Text size="xs" c="blue" fw={500} style={{ whiteSpace: 'nowrap' }}>
      A card is being freed for {admin ? 'it' : 'you'} at{' '}
      <time dateTime={at} title={formatDateTime(at)}>
        {formatClock(at, now)}
      </time>
    </Text>
  );
}

/** "2 cards of this model are held for another group's booking until 10:15." */
export function heldInWords(held: HeldForBookingOut, now = Date.now()): string {
  const cards = held.cards === 1 ? '1 card of this model is' : `${held.cards} cards of this model are`;
  return `${cards} held for another group's booking until ${formatClock(held.until, now)}.`;
}

export function HeldForBooking({ held }: { held: HeldForBookingOut }) {
  const now = useNow(true, 60_000);
  return <>{heldInWords(held, now)}</>;
}

function QueueRow({ item, admin }: { item: QueueItemOut; admin: boolean }) {
  const cancel = useCancelRequest();
  const status = STATUS[item.status];
  const what = [item.model, item.tier].filter(Boolean).join(' ') || 'CPU only';
  return (
    <Table.Tr>
      {admin && <Table.Td>{item.user_email}</Table.Td>}
      <Table.Td>{what}</Table.Td>
      <Table.Td>
        <Stack gap={4} align="flex-start">
          <Tooltip label={item.reason} disabled={!item.reason} multiline w={320} withArrow>
            <Badge variant="light" color={status.color} style={{ overflow: 'visible' }}>
              {status.label}
            </Badge>
          </Tooltip>
          {item.status === 'queued' && item.card_freed_at && <CardFreed at={item.card_freed_at} admin={admin} />}
          {item.status === 'queued' && item.waits_for && (
            <Text size="xs" maw={320}>
              Waits for {item.waits_for}.
            </Text>
          )}
          {item.status === 'queued' && item.ahead && (
            <Text size="xs" c="dimmed" maw={320}>
              {item.ahead.in_words}
            </Text>
          )}
          {item.status === 'queued' && item.held_for_booking && (
            <Text size="xs" c="dimmed" maw={320}>
              <HeldForBooking held={item.held_for_booking} />
            </Text>
          )}
        </Stack>
      </Table.Td>
      <Table.Td>{item.position ?? '—'}</Table.Td>
      <Table.Td maw={260}>
        <StartEstimate start={item.start} waitSeconds={item.estimated_wait_seconds} />
      </Table.Td>
      {admin && (
        <Table.Td>
          {item.priority ? (
            <>
              <Priority priority={item.priority} />
              <PriorityParts priority={item.priority} />
            </>
          ) : (
            '—'
          )}
        </Table.Td>
      )}
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(item.enqueued_at)}</Table.Td>
      <Table.Td>
        {item.status === 'queued' && (
          <ConfirmButton
            label="Cancel"
            title="Cancel request"
            message={
              admin
                ? `Cancel ${item.user_email}'s queued request for ${what}? It leaves the queue and its place is lost.`
                : `Cancel your queued request for ${what}? It leaves the queue and its place is lost.`
            }
            confirmLabel="Cancel request"
            onConfirm={() => cancel.mutateAsync(item.id)}
          />
        )}
      </Table.Td>
    </Table.Tr>
  );
}

/**
 * Admission requests, newest first: `own` lists the caller's, `all` every request in the groups
 * the caller administers, with each queued one's priority and its parts.
 */
export function QueueTable({ scope }: { scope: 'own' | 'all' }) {
  const queue = useQueue(scope);
  const items = queue.data?.items ?? [];
  const admin = scope === 'all';
  return (
    <QueryState
      query={queue}
      isEmpty={items.length === 0}
      empty={admin ? 'No admission requests in your groups.' : 'You have no admission requests.'}
    >
      <Table.ScrollContainer minWidth={admin ? 1100 : 700}>
        <Table striped aria-label={admin ? 'Queue' : 'My requests'}>
          <Table.Thead>
            <Table.Tr>
              {admin && <Table.Th>User</Table.Th>}
              <Table.Th>GPU</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Position</Table.Th>
              <Table.Th>Estimated start</Table.Th>
              {admin && <Table.Th>Priority</Table.Th>}
              <Table.Th>Asked</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {items.map((item) => (
              <QueueRow key={item.id} item={item} admin={admin} />
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </QueryState>
  );
}
