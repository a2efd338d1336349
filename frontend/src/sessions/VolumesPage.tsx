import { Badge, Progress, Stack, Table, Text } from '@mantine/core';
import { useDeleteVolume, useVolumes, type VolumeList, type VolumeOut } from '../api/hooks/sessions';
import { useSession } from '../auth/session';
import { PageHeader } from '../admin/PageHeader';
import { ConfirmButton } from '../ui/ConfirmButton';
import { formatDate } from '../ui/format';
import { QueryState } from '../ui/QueryState';
import { VolumeUsers } from './sessionParts';

/** The caller's home volumes against the storage limit their groups' policies set. */
function StorageUse({ list }: { list: VolumeList }) {
  const limit = list.storage_limit_gib;
  if (limit === null || limit === undefined) {
    return (
      <Text size="sm">
        Home volumes: <b>{list.home_total_gib} GiB</b>, no storage limit.
      </Text>
    );
  }
  const share = limit > 0 ? Math.min(100, (list.home_total_gib / limit) * 100) : 100;
  return (
    <Stack gap={4} maw={420}>
      <Text size="sm">
        Home volumes: <b>{list.home_total_gib} GiB</b> of {limit} GiB allowed
      </Text>
      <Progress value={share} color={share >= 90 ? 'red' : 'blue'} aria-label="Storage used" />
    </Stack>
  );
}

function VolumeRow({ volume, groupName }: { volume: VolumeOut; groupName: string | null }) {
  const remove = useDeleteVolume();
  return (
    <Table.Tr>
      <Table.Td>
        <Text size="sm" fw={500}>
          {volume.name}
        </Text>
      </Table.Td>
      <Table.Td>
        {volume.kind === 'home' ? (
          <Badge variant="light">Home</Badge>
        ) : (
          <Badge variant="light" color="grape">
            Shared{groupName ? ` · ${groupName}` : ''}
          </Badge>
        )}
      </Table.Td>
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{volume.size_gib} GiB</Table.Td>
      <Table.Td>{volume.access_mode === 'ReadOnlyMany' ? 'Read-only' : 'Read-write'}</Table.Td>
      <Table.Td>
        <VolumeUsers volume={volume} linked />
      </Table.Td>
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDate(volume.created_at)}</Table.Td>
      <Table.Td>
        {/* Shared volumes belong to the group; only unused home volumes are the caller's to delete. */}
        {volume.kind === 'home' && volume.used_by.length === 0 && (
          <ConfirmButton
            label="Delete"
            title="Delete volume"
            message={`Delete ${volume.name} (${volume.size_gib} GiB)? Everything saved in it is lost.`}
            confirmLabel="Delete volume"
            onConfirm={() => remove.mutateAsync(volume.id)}
          />
        )}
      </Table.Td>
    </Table.Tr>
  );
}

export function VolumesPage() {
  const { me } = useSession();
  const volumes = useVolumes();
  const items = volumes.data?.items ?? [];
  const groupNames = new Map(me.memberships.map((m) => [m.group_id, m.group_name]));
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader title="Volumes" description="Your home volumes and the shared volumes of your groups." />
      <QueryState
        query={volumes}
        isEmpty={items.length === 0}
        empty="You have no volumes yet. A session gets a home volume when it starts."
      >
        {volumes.data && <StorageUse list={volumes.data} />}
        <Table.ScrollContainer minWidth={860} mt="md">
          <Table striped aria-label="Volumes">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Kind</Table.Th>
                <Table.Th>Size</Table.Th>
                <Table.Th>Access</Table.Th>
                <Table.Th>Used by</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((volume) => (
                <VolumeRow
                  key={volume.id}
                  volume={volume}
                  groupName={volume.group_id ? (groupNames.get(volume.group_id) ?? null) : null}
                />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </QueryState>
    </Stack>
  );
}
