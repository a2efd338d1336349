import { Badge, Stack, Table, Text, Title } from '@mantine/core';
import dayjs from 'dayjs';
import { useId, useMemo, type ReactNode } from 'react';
import { useActionableGroups } from '../admin/actionableGroups';
import { QueryState } from '../ui/QueryState';
import { Countdown } from './Countdown';
import { NOTICE_KINDS, NOTICE_REASONS, usePendingNotices, type NoticeOut, type PreemptionCountOut } from './notices';

/** A group by name where the caller sees it, else by the start of its id. */
function GroupName({ id, names }: { id: string | null; names: Map<string, string> }) {
  if (!id) return <>—</>;
  const name = names.get(id);
  if (name) return <>{name}</>;
  return (
    <Text span size="sm" ff="monospace" title={id}>
      {id.slice(0, 8)}…
    </Text>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section aria-labelledby={id}>
      <Title order={3} size="h4" id={id} mb="xs">
        {title}
      </Title>
      {children}
    </section>
  );
}

function NoticeRow({ notice, names }: { notice: NoticeOut; names: Map<string, string> }) {
  return (
    <Table.Tr>
      <Table.Td>
        <Badge variant="light" color={notice.kind === 'drain' ? 'grape' : 'orange'} style={{ overflow: 'visible' }}>
          {NOTICE_KINDS[notice.kind]}
        </Badge>
      </Table.Td>
      <Table.Td>{NOTICE_REASONS[notice.reason]}</Table.Td>
      <Table.Td>
        Paused <Countdown deadline={notice.deadline} />
      </Table.Td>
      <Table.Td>
        <GroupName id={notice.group_id} names={names} />
      </Table.Td>
      <Table.Td>
        <GroupName id={notice.for_group_id} names={names} />
      </Table.Td>
    </Table.Tr>
  );
}

const tabular = { fontVariantNumeric: 'tabular-nums' } as const;

function CountsTable({ counts, names }: { counts: PreemptionCountOut[]; names: Map<string, string> }) {
  if (counts.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        No session was preempted in the last 30 days.
      </Text>
    );
  }
  return (
    <Table.ScrollContainer minWidth={480}>
      <Table striped aria-label="Preemptions in the last 30 days">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Group</Table.Th>
            <Table.Th ta="right">Its sessions paused for others</Table.Th>
            <Table.Th ta="right">Others' sessions paused for it</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {counts.map((count) => (
            <Table.Tr key={count.group_id}>
              <Table.Td>
                <GroupName id={count.group_id} names={names} />
              </Table.Td>
              <Table.Td ta="right" style={tabular}>
                {count.preempted}
              </Table.Td>
              <Table.Td ta="right" style={tabular}>
                {count.preempting}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/**
 * Sessions told they will be paused, soonest first: for a queued request of another group
 * (preemption) or for maintenance (drain); and how often each group lost and gained a card
 * that way over the last 30 days.
 */
export function PendingPreemptions() {
  const notices = usePendingNotices();
  const { names } = useActionableGroups(null);
  const items = useMemo(
    () => [...(notices.data?.items ?? [])].sort((a, b) => dayjs(a.deadline).diff(b.deadline)),
    [notices.data],
  );
  const counts = useMemo(
    () => [...(notices.data?.counts ?? [])].sort((a, b) => b.preempted + b.preempting - (a.preempted + a.preempting)),
    [notices.data],
  );
  return (
    <Stack gap="lg">
      <Section title="Pending preemptions">
        <QueryState query={notices} isEmpty={items.length === 0} empty="No session in your groups is waiting to be paused.">
          <Table.ScrollContainer minWidth={800}>
            <Table striped aria-label="Pending preemptions">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Kind</Table.Th>
                  <Table.Th>Reason</Table.Th>
                  <Table.Th>Deadline</Table.Th>
                  <Table.Th>Taken from</Table.Th>
                  <Table.Th>For</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((notice) => (
                  <NoticeRow key={notice.id} notice={notice} names={names} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </QueryState>
      </Section>
      {notices.data && (
        <Section title="Preemptions in the last 30 days">
          <CountsTable counts={counts} names={names} />
        </Section>
      )}
    </Stack>
  );
}
