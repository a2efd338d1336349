import { Anchor, Group, Paper, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useId, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useCluster, useRemoveCluster } from '../../api/hooks/clusters';
import type { CardOut, ClusterDetailOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDateTime, formatMemoryGiB } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';
import { PageHeader } from '../PageHeader';
import { CardCounts, CardHealthBadge, ClusterStatusBadge, TimeAgo } from './clusterParts';
import { removeClusterMessage } from './removeMessage';

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Paper withBorder p="sm" radius="md" role="group" aria-label={label}>
      <Text size="xs" c="dimmed" mb={4}>
        {label}
      </Text>
      {children}
    </Paper>
  );
}

function Summary({ cluster }: { cluster: ClusterDetailOut }) {
  return (
    <Stack gap="md">
      <Group gap="sm" wrap="nowrap" align="flex-start">
        <ClusterStatusBadge cluster={cluster} />
        {cluster.status_message && <Text size="sm">{cluster.status_message}</Text>}
      </Group>
      <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }}>
        <Fact label="API server">
          <Text size="sm" ff="monospace" style={{ wordBreak: 'break-all' }}>
            {cluster.api_server}
          </Text>
        </Fact>
        <Fact label="Sessions domain">
          <Text size="sm" ff="monospace" style={{ wordBreak: 'break-all' }}>
            {cluster.sessions_domain}
          </Text>
        </Fact>
        <Fact label="Last contact">
          <TimeAgo iso={cluster.last_contact_at} />
        </Fact>
        <Fact label="Registered">
          <Text size="sm">{formatDateTime(cluster.created_at)}</Text>
        </Fact>
        <Fact label="Nodes">
          <Text size="sm">{cluster.nodes}</Text>
        </Fact>
        <Fact label="Cards">
          <CardCounts cluster={cluster} />
        </Fact>
      </SimpleGrid>
    </Stack>
  );
}

/** Cards per node, nodes in name order, cards in the order the server lists them. */
function byNode(cards: CardOut[]): [string, CardOut[]][] {
  const groups = new Map<string, CardOut[]>();
  for (const card of cards) {
    const list = groups.get(card.node);
    if (list) list.push(card);
    else groups.set(card.node, [card]);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
}

function NodeCards({ node, cards }: { node: string; cards: CardOut[] }) {
  const headingId = useId();
  return (
    <section aria-labelledby={headingId}>
      <Group gap="xs" align="baseline" mb="xs">
        <Title order={4} size="h5" id={headingId} ff="monospace">
          {node}
        </Title>
        <Text size="xs" c="dimmed">
          {cards.length === 1 ? '1 card' : `${cards.length} cards`}
        </Text>
      </Group>
      <Table.ScrollContainer minWidth={800}>
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>UUID</Table.Th>
              <Table.Th>Model</Table.Th>
              <Table.Th>Memory</Table.Th>
              <Table.Th>Cores</Table.Th>
              <Table.Th>Split count</Table.Th>
              <Table.Th>Health</Table.Th>
              <Table.Th>Last seen</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {cards.map((card) => (
              <Table.Tr key={card.uuid}>
                <Table.Td>
                  <Text size="xs" ff="monospace" style={{ wordBreak: 'break-all' }}>
                    {card.uuid}
                  </Text>
                </Table.Td>
                <Table.Td>{card.model}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatMemoryGiB(card.memory_mib)}</Table.Td>
                <Table.Td>{card.cores}</Table.Td>
                <Table.Td>{card.split_count}</Table.Td>
                <Table.Td>
                  <CardHealthBadge card={card} />
                </Table.Td>
                <Table.Td>
                  <TimeAgo iso={card.last_seen_at} />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </section>
  );
}

export function ClusterDetailPage() {
  const { clusterId = '' } = useParams();
  const { can } = useSession();
  const cluster = useCluster(clusterId);
  const remove = useRemoveCluster();
  const navigate = useNavigate();
  const nodes = cluster.data ? byNode(cluster.data.card_list) : [];

  return (
    <Stack maw={1200} gap="lg">
      <Anchor component={Link} to="/admin/clusters" size="sm">
        ← Clusters
      </Anchor>
      <QueryState query={cluster}>
        {cluster.data && (
          <Stack gap="xl">
            <div>
              <PageHeader
                title={cluster.data.name}
                description="Cluster"
                actions={
                  can('clusters.manage') && (
                    <ConfirmButton
                      size="sm"
                      label="Remove"
                      title="Remove cluster"
                      message={removeClusterMessage(cluster.data.name)}
                      confirmLabel="Remove cluster"
                      onConfirm={async () => {
                        await remove.mutateAsync(clusterId);
                        navigate('/admin/clusters', { replace: true });
                      }}
                    />
                  )
                }
              />
              <Summary cluster={cluster.data} />
            </div>
            <Stack gap="md">
              <Title order={3} size="h4">
                Cards
              </Title>
              {nodes.length === 0 ? (
                <Text size="sm" c="dimmed">
                  This cluster has not reported any cards yet.
                </Text>
              ) : (
                nodes.map(([node, cards]) => <NodeCards key={node} node={node} cards={cards} />)
              )}
            </Stack>
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
