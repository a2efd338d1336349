import { Alert, Anchor, Button, Group, Stack, Table, Text } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import { useClusters, useRemoveCluster } from '../../api/hooks/clusters';
import type { ClusterOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { PagedTable } from '../../ui/PagedTable';
import { PageHeader } from '../../ui/PageHeader';
import { CardCounts, ClusterStatusBadge, TimeAgo } from './clusterParts';
import { RegisterClusterModal } from './RegisterClusterModal';
import { removeClusterMessage } from './removeMessage';

export function ClustersPage() {
  const { can } = useSession();
  const clusters = useClusters();
  const remove = useRemoveCluster();
  const [registering, setRegistering] = useState(false);
  const [registered, setRegistered] = useState<ClusterOut | null>(null);

  return (
    <Stack gap={0} maw={1200}>
      <PageHeader
        title="Clusters"
        description="The clusters whose GPUs GShare shares out, and the state of their cards."
        actions={can('clusters.manage') && <Button onClick={() => setRegistering(true)}>Register cluster</Button>}
      />
      {registered && (
        <Alert color="green" mb="md" withCloseButton onClose={() => setRegistered(null)} closeButtonLabel="Dismiss">
          Registered {registered.name}. Its cards are listed once the cluster reports them.
        </Alert>
      )}
      <PagedTable
        list={clusters}
        empty="No clusters registered yet."
        minWidth={900}
        striped
        highlightOnHover
        head={
          <>
            <Table.Th>Name</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>API server</Table.Th>
            <Table.Th>Last contact</Table.Th>
            <Table.Th>Nodes</Table.Th>
            <Table.Th>Cards</Table.Th>
            <Table.Th aria-label="Actions" />
          </>
        }
        row={(cluster) => (
          <Table.Tr key={cluster.id}>
            <Table.Td>
              <Anchor component={Link} to={`/admin/clusters/${cluster.id}`}>
                {cluster.name}
              </Anchor>
            </Table.Td>
            <Table.Td maw={280}>
              <ClusterStatusBadge cluster={cluster} />
              {cluster.status !== 'connected' && cluster.status_message && (
                <Text size="xs" c="dimmed" mt={4} lineClamp={2}>
                  {cluster.status_message}
                </Text>
              )}
            </Table.Td>
            <Table.Td>
              <Text size="sm" ff="monospace" style={{ wordBreak: 'break-all' }}>
                {cluster.api_server}
              </Text>
            </Table.Td>
            <Table.Td>
              <TimeAgo iso={cluster.last_contact_at} />
            </Table.Td>
            <Table.Td style={{ fontVariantNumeric: 'tabular-nums' }}>{cluster.nodes}</Table.Td>
            <Table.Td>
              <CardCounts cluster={cluster} />
            </Table.Td>
            <Table.Td>
              {can('clusters.manage') && (
                <Group justify="flex-end">
                  <ConfirmButton
                    label="Remove"
                    title="Remove cluster"
                    message={removeClusterMessage(cluster.name)}
                    confirmLabel="Remove cluster"
                    onConfirm={() => remove.mutateAsync(cluster.id)}
                  />
                </Group>
              )}
            </Table.Td>
          </Table.Tr>
        )}
      />
      <RegisterClusterModal opened={registering} onClose={() => setRegistering(false)} onRegistered={setRegistered} />
    </Stack>
  );
}
