import { Alert, Badge, Stack, Table, Text, Title } from '@mantine/core';
import { useOrgIsolation } from '../../api/hooks/isolation';
import { formatDateTime } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';

const SET_AT: Record<string, string> = {
  default: 'the default',
  global: 'set for everyone',
  organization: 'set for this organization',
};

/** An organization's isolation level, where its sessions ran in the last 30 days, and any pod found outside its level. */
export function OrgIsolationSection({ orgId }: { orgId: string }) {
  const view = useOrgIsolation(orgId);
  const data = view.data;
  return (
    <Stack gap="sm">
      <Title order={2} size="h4">
        Isolation
      </Title>
      <QueryState query={view}>
        {data && (
          <Stack gap="sm">
            <Text size="sm">
              Level <Badge variant="light">{data.level}</Badge> ({SET_AT[data.level_set_at] ?? data.level_set_at})
              {Object.keys(data.group_levels).length > 0 &&
                `; ${Object.keys(data.group_levels).length} group(s) set their own`}
              . {data.dedications.length} dedicated node(s).
            </Text>
            {data.incidents.length > 0 ? (
              <Alert color="red" title={`${data.incidents.length} pod(s) found outside their level`}>
                <Stack gap={4}>
                  {data.incidents.map((incident) => (
                    <Text size="sm" key={incident.id}>
                      {formatDateTime(incident.found_at)} · {incident.node || 'not scheduled'} · {incident.reason}
                    </Text>
                  ))}
                </Stack>
              </Alert>
            ) : (
              <Text size="sm" c="dimmed">
                No pod was found outside its level in the last 30 days.
              </Text>
            )}
            <Table.ScrollContainer minWidth={720}>
              <Table striped aria-label="Where sessions ran">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Cluster</Table.Th>
                    <Table.Th>Node</Table.Th>
                    <Table.Th>Level</Table.Th>
                    <Table.Th>Runtime class</Table.Th>
                    <Table.Th>User namespaces</Table.Th>
                    <Table.Th>Dedicated node</Table.Th>
                    <Table.Th>Sessions</Table.Th>
                    <Table.Th>Last started</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {data.placed.length === 0 && (
                    <Table.Tr>
                      <Table.Td colSpan={8}>
                        <Text size="sm" c="dimmed">
                          No GPU session ran in the last 30 days.
                        </Text>
                      </Table.Td>
                    </Table.Tr>
                  )}
                  {data.placed.map((placed) => (
                    <Table.Tr key={`${placed.cluster_id}/${placed.node}/${placed.level}/${placed.runtime_class}/${placed.user_namespaces}/${placed.dedicated}`}>
                      <Table.Td>{placed.cluster_name}</Table.Td>
                      <Table.Td>{placed.node}</Table.Td>
                      <Table.Td>{placed.level}</Table.Td>
                      <Table.Td>{placed.runtime_class ?? '—'}</Table.Td>
                      <Table.Td>{placed.user_namespaces ? 'Yes' : 'No'}</Table.Td>
                      <Table.Td>{placed.dedicated ? 'Yes' : 'No'}</Table.Td>
                      <Table.Td style={{ fontVariantNumeric: 'tabular-nums' }}>{placed.sessions}</Table.Td>
                      <Table.Td>{formatDateTime(placed.last_at)}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
