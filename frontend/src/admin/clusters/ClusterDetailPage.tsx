import { Anchor, Badge, Group, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useId, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useClusterCards } from '../../api/hooks/capacity';
import { useCluster, useRemoveCluster } from '../../api/hooks/clusters';
import type { CardOut, ClusterOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDateTime, formatMemoryGiB } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';
import { PageHeader } from '../../ui/PageHeader';
import { CardActions } from './CardActions';
import { CardPicture } from './CardPicture';
import { CardCounts, CardHealthBadge, cardHealth, ClusterStatusBadge, TimeAgo } from './clusterParts';
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

function Summary({ cluster }: { cluster: ClusterOut }) {
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

const HEALTH_BORDER = { healthy: undefined, unhealthy: 'var(--mantine-color-red-6)', missing: 'var(--mantine-color-orange-6)' };

function CardTile({ card, canManage }: { card: CardOut; canManage: boolean }) {
  const health = cardHealth(card);
  return (
    <Paper
      withBorder
      p="sm"
      radius="md"
      role="group"
      aria-label={`Card ${card.uuid}`}
      style={HEALTH_BORDER[health] ? { borderColor: HEALTH_BORDER[health], borderWidth: 2 } : undefined}
    >
      <Stack gap="xs">
        <Group justify="space-between" wrap="nowrap" align="flex-start">
          <div style={{ minWidth: 0 }}>
            <Text size="sm" fw={600}>
              {card.model}
            </Text>
            <Text size="xs" c="dimmed" ff="monospace" style={{ wordBreak: 'break-all' }}>
              {card.uuid}
            </Text>
          </div>
          <Group gap={4} wrap="nowrap">
            <Badge variant="outline" color="gray" style={{ overflow: 'visible' }}>
              {card.pool === 'mig' ? 'MIG' : 'hami-core'}
            </Badge>
            <CardHealthBadge card={card} />
          </Group>
        </Group>
        <CardPicture card={card} />
        <Group gap="md" justify="space-between">
          <Text size="xs" c="dimmed">
            {formatMemoryGiB(card.memory_mib)}
            {card.carved_tier && ` · carved ${card.carved_tier}`}
            {card.free_slots !== null && ` · ${card.free_slots} free`}
            {health === 'missing' && ' · last seen '}
            {health === 'missing' && <TimeAgo iso={card.last_seen_at} />}
          </Text>
          {canManage && <CardActions card={card} />}
        </Group>
      </Stack>
    </Paper>
  );
}

function NodeCards({ node, cards, canManage }: { node: string; cards: CardOut[]; canManage: boolean }) {
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
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        {cards.map((card) => (
          <CardTile key={card.id} card={card} canManage={canManage} />
        ))}
      </SimpleGrid>
    </section>
  );
}

function Inventory({ clusterId }: { clusterId: string }) {
  const { can } = useSession();
  const cards = useClusterCards(clusterId);
  const nodes = cards.data ? byNode(cards.data.items) : [];
  return (
    <Stack gap="md">
      <Title order={3} size="h4">
        Inventory
      </Title>
      <QueryState query={cards} isEmpty={nodes.length === 0} empty="This cluster has not reported any cards yet.">
        {nodes.map(([node, list]) => (
          <NodeCards key={node} node={node} cards={list} canManage={can('capacity.manage')} />
        ))}
      </QueryState>
    </Stack>
  );
}

export function ClusterDetailPage() {
  const { clusterId = '' } = useParams();
  const { can } = useSession();
  const cluster = useCluster(clusterId);
  const remove = useRemoveCluster();
  const navigate = useNavigate();

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
            {can('capacity.read') && <Inventory clusterId={clusterId} />}
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
