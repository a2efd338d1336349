import { Alert, Badge, Stack, Table, Text } from '@mantine/core';
import { useWorkerHealth } from '../../api/hooks/sessions';
import { formatDateTime } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';

/** Each worker loop's last run, how late its last success is, and its errors; and the clusters
 * whose GPU metrics cannot be read (nothing on them is paused for idleness). */
export function WorkerHealthSection() {
  const health = useWorkerHealth();
  const loops = health.data?.loops ?? [];
  const problems = health.data?.metrics_problems ?? [];
  const orphans = health.data?.orphans ?? [];
  return (
    <QueryState query={health} isEmpty={loops.length === 0} empty="No worker has run yet.">
      <Stack gap="md">
        {problems.map((problem) => (
          <Alert key={problem.cluster_id} color="orange" title={`GPU metrics of ${problem.cluster_name} cannot be read`}>
            {problem.error} Sessions on this cluster are not paused for idleness until it reads again.
          </Alert>
        ))}
        {orphans.map((cluster) => (
          <Alert key={cluster.cluster_id} color="yellow" title={`Resources without a session in ${cluster.cluster_name}`}>
            No session of this cluster stands for {cluster.resources.join(', ')}. GShare leaves them alone; delete
            them in the cluster if nobody needs them.
          </Alert>
        ))}
        <Table striped aria-label="Worker loops">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Loop</Table.Th>
              <Table.Th>Last run</Table.Th>
              <Table.Th>Last success</Table.Th>
              <Table.Th ta="right">Lag</Table.Th>
              <Table.Th>Errors</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {loops.map((loop) => (
              <Table.Tr key={loop.name}>
                <Table.Td>{loop.name}</Table.Td>
                <Table.Td>{formatDateTime(loop.last_run_at)}</Table.Td>
                <Table.Td>{loop.last_ok_at ? formatDateTime(loop.last_ok_at) : 'never'}</Table.Td>
                <Table.Td ta="right">{loop.lag_seconds === null ? '—' : `${loop.lag_seconds} s`}</Table.Td>
                <Table.Td>
                  {loop.failures > 0 ? (
                    <Stack gap={2}>
                      <Badge color="red" variant="light">
                        {loop.failures} in a row
                      </Badge>
                      <Text size="xs" c="dimmed">
                        {loop.last_error}
                      </Text>
                    </Stack>
                  ) : (
                    <Badge color="green" variant="light">
                      none
                    </Badge>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Stack>
    </QueryState>
  );
}
