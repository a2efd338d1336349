import { Anchor, Group, Paper, SimpleGrid, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useCluster, useRemoveCluster } from '../../api/hooks/clusters';
import type { ClusterOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDateTime } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';
import { PageHeader } from '../../ui/PageHeader';
import { ClusterInventory } from './ClusterInventory';
import { CardCounts, ClusterStatusBadge, TimeAgo } from './clusterParts';
import { DrainsSection } from './DrainsSection';
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
            {can('capacity.read') && (
              <DrainsSection clusterId={clusterId} clusterName={cluster.data.name} canManage={can('capacity.manage')} />
            )}
            {can('capacity.read') && <ClusterInventory clusterId={clusterId} />}
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
