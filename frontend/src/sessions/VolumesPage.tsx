import { Badge, Progress, Stack, Text } from '@mantine/core';
import { useDeleteVolume, useVolumes, type VolumeList, type VolumeOut } from '../api/hooks/sessions';
import { useSession } from '../auth/session';
import { ConfirmButton } from '../ui/ConfirmButton';
import { PageHeader } from '../ui/PageHeader';
import { QueryState } from '../ui/QueryState';
import { VolumeTable } from './VolumeTable';

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

function KindBadge({ volume, groupName }: { volume: VolumeOut; groupName: string | null }) {
  return volume.kind === 'home' ? (
    <Badge variant="light">Home</Badge>
  ) : (
    <Badge variant="light" color="grape">
      Shared{groupName ? ` · ${groupName}` : ''}
    </Badge>
  );
}

export function VolumesPage() {
  const { me } = useSession();
  const volumes = useVolumes();
  const remove = useDeleteVolume();
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
        <VolumeTable
          volumes={items}
          label="Volumes"
          minWidth={860}
          mt="md"
          kind={(volume) => (
            <KindBadge volume={volume} groupName={volume.group_id ? (groupNames.get(volume.group_id) ?? null) : null} />
          )}
          linkUsers
          actions={(volume) =>
            // Shared volumes belong to the group; only unused home volumes are the caller's to delete.
            volume.kind === 'home' &&
            volume.used_by.length === 0 && (
              <ConfirmButton
                label="Delete"
                title="Delete volume"
                message={`Delete ${volume.name} (${volume.size_gib} GiB)? Everything saved in it is lost.`}
                confirmLabel="Delete volume"
                onConfirm={() => remove.mutateAsync(volume.id)}
              />
            )
          }
        />
      </QueryState>
    </Stack>
  );
}
