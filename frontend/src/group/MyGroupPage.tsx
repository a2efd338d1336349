import { Badge, Card, Loader, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useState } from 'react';
import { useMe } from '../api/hooks/me';
import { queries } from '../api/keys';
import type { GroupShareOut, GroupStandingOut } from '../api/types';
import { PageHeader } from '../ui/PageHeader';
import { QueryState } from '../ui/QueryState';
import { cards, hours, weight } from './numbers';

// The charts load when first drawn, not with the console.
const UseChart = lazy(() => import('./UseChart').then((module) => ({ default: module.UseChart })));

/** Fair share's two levels: the organization among organizations, then the group within it. */
function Levels({ share }: { share: GroupShareOut }) {
  const { org, group } = share;
  return (
    <Table aria-label="Fair share">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Level</Table.Th>
          <Table.Th>Recent use (cards)</Table.Th>
          <Table.Th>In use now</Table.Th>
          <Table.Th>Share (cards)</Table.Th>
          <Table.Th>Weight</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        <Table.Tr>
          <Table.Td>
            {org.name}{' '}
            <Text span size="xs" c="dimmed">
              of {share.cards} cards
            </Text>
          </Table.Td>
          <Table.Td>{cards(org.usage)}</Table.Td>
          <Table.Td>{cards(org.in_use)}</Table.Td>
          <Table.Td>{cards(org.share)}</Table.Td>
          <Table.Td>{weight(org.weight)}</Table.Td>
        </Table.Tr>
        <Table.Tr>
          <Table.Td>
            {group.name}{' '}
            <Text span size="xs" c="dimmed">
              of {org.name}&apos;s share
            </Text>
          </Table.Td>
          <Table.Td>{cards(group.usage)}</Table.Td>
          <Table.Td>{cards(group.in_use)}</Table.Td>
          <Table.Td>{group.share === null ? 'not running or waiting' : cards(group.share)}</Table.Td>
          <Table.Td>{weight(group.weight)}</Table.Td>
        </Table.Tr>
      </Table.Tbody>
    </Table>
  );
}

function Standings({ share }: { share: GroupShareOut }) {
  const row = (g: GroupStandingOut) => (
    <Table.Tr key={g.group_id}>
      <Table.Td>
        {g.name}{' '}
        {g.group_id === share.group.group_id && (
          <Badge size="xs" variant="light">
            yours
          </Badge>
        )}
      </Table.Td>
      <Table.Td>{cards(g.usage)}</Table.Td>
      <Table.Td>{cards(g.in_use)}</Table.Td>
      <Table.Td>{g.share === null ? 'not running or waiting' : cards(g.share)}</Table.Td>
      <Table.Td>{weight(g.weight)}</Table.Td>
    </Table.Tr>
  );
  return (
    <Table aria-label={`Groups of ${share.org_name}`}>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Group</Table.Th>
          <Table.Th>Recent use (cards)</Table.Th>
          <Table.Th>In use now</Table.Th>
          <Table.Th>Share of {share.org_name} (cards)</Table.Th>
          <Table.Th>Weight</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>{share.groups.map(row)}</Table.Tbody>
    </Table>
  );
}

function Members({ share }: { share: GroupShareOut }) {
  if (!share.members) return null;
  return (
    <Card withBorder>
      <Title order={4} mb="xs">
        Members&apos; use
      </Title>
      <Text size="sm" c="dimmed" mb="xs">
        Shown to the group&apos;s admins. A person&apos;s recent use counts across all their groups, as the queue weighs it.
      </Text>
      <Table aria-label="Members' use">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Member</Table.Th>
            <Table.Th>Recent use (cards)</Table.Th>
            <Table.Th>In use now here</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {share.members.map((m) => (
            <Table.Tr key={m.user_id}>
              <Table.Td>{m.email}</Table.Td>
              <Table.Td>{cards(m.usage)}</Table.Td>
              <Table.Td>{cards(m.in_use)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Card>
  );
}

function ShareView({ share }: { share: GroupShareOut }) {
  return (
    <Stack>
      <Card withBorder>
        <Title order={4} mb="xs">
          {share.group.name}
        </Title>
        <Text size="sm" mb="sm">
          {share.in_words}
        </Text>
        <Text size="sm" c="dimmed" mb="xs">
          The {share.cards} cards are split among the {share.active_orgs}{' '}
          {share.active_orgs === 1 ? 'organization' : 'organizations'} running or waiting by their weights, then each
          organization&apos;s share among its groups running or waiting by theirs.
        </Text>
        <Table.ScrollContainer minWidth={480} mb="sm">
          <Levels share={share} />
        </Table.ScrollContainer>
        <Suspense fallback={<Loader size="sm" aria-label="Loading the chart" />}>
          <UseChart share={share} />
        </Suspense>
      </Card>
      <Card withBorder>
        <Title order={4} mb="xs">
          {share.org_name}
        </Title>
        <Text size="sm" c="dimmed" mb="xs">
          Every group of the organization, with the same numbers. Recent use halves every {hours(share.half_life_seconds)} unless
          renewed; the organization&apos;s share of {cards(share.org.share)} cards is split by weight among its{' '}
          {share.active_groups} {share.active_groups === 1 ? 'group' : 'groups'} running or waiting.
        </Text>
        <Table.ScrollContainer minWidth={480}>
          <Standings share={share} />
        </Table.ScrollContainer>
      </Card>
      <Members share={share} />
    </Stack>
  );
}

function GroupShare({ groupId }: { groupId: string }) {
  const found = useQuery({ ...queries.groupShare(groupId), refetchInterval: 60_000 });
  return <QueryState query={found}>{found.data && <ShareView share={found.data} />}</QueryState>;
}

/** "My group": the group's GPU use against its share, beside its organization's other groups. */
export function MyGroupPage() {
  const me = useMe();
  const groups = (me.data?.memberships ?? []).filter((m) => m.active);
  const [chosen, setChosen] = useState<string | null>(null);
  const groupId = chosen ?? groups[0]?.group_id ?? null;
  return (
    <>
      <PageHeader
        title="My group"
        description="How much GPU your group used recently against its share, and where that puts its requests in the queue."
      />
      {groups.length > 1 && (
        <SegmentedControl
          mb="md"
          value={groupId ?? ''}
          onChange={setChosen}
          data={groups.map((g) => ({ value: g.group_id, label: g.group_name }))}
        />
      )}
      {groupId ? <GroupShare groupId={groupId} /> : <Text c="dimmed">You are in no group yet.</Text>}
    </>
  );
}
