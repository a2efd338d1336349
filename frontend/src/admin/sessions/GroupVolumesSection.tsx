import { Button, Group, NumberInput, SegmentedControl, Select, Stack, Text, TextInput } from '@mantine/core';
import { useEffect, useState } from 'react';
import {
  useCreateGroupVolume,
  useDeleteGroupVolume,
  useGroupVolumes,
  type SharedVolumeCreate,
  type VolumeOut,
} from '../../api/hooks/sessions';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { asNumber, outOfRange } from '../../ui/form';
import { QueryState } from '../../ui/QueryState';
import { VolumeTable } from '../../sessions/VolumeTable';
import { useActionableGroups } from '../actionableGroups';
import { FormModal } from '../capacity/FormModal';
import { ADMINISTERS_GROUP } from './access';

type AccessMode = SharedVolumeCreate['access_mode'];

const ACCESS_LABELS: Record<NonNullable<AccessMode>, string> = {
  ReadWriteMany: 'Read-write',
  ReadOnlyMany: 'Read-only',
};

const VOLUME_SIZE = { min: 1, max: 16384, integer: true, unit: 'GiB' };

// Kubernetes names: lower-case letters, digits and inner dashes.
const VOLUME_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface NewVolumeModalProps {
  groupId: string;
  groupName: string;
  opened: boolean;
  onClose: () => void;
}

function NewVolumeModal({ groupId, groupName, opened, onClose }: NewVolumeModalProps) {
  const create = useCreateGroupVolume();
  const [name, setName] = useState('');
  const [size, setSize] = useState<number | string>(50);
  const [access, setAccess] = useState<NonNullable<AccessMode>>('ReadWriteMany');
  useEffect(() => {
    if (opened) {
      setName('');
      setSize(50);
      setAccess('ReadWriteMany');
    }
  }, [opened]);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`New shared volume for ${groupName}`}
      submitLabel="Create volume"
      onSubmit={() => {
        const trimmed = name.trim();
        if (!VOLUME_NAME.test(trimmed) || trimmed.length > 40) {
          return 'Use up to 40 lower-case letters, digits and dashes, starting and ending with a letter or digit.';
        }
        const wrongSize = outOfRange(size, VOLUME_SIZE);
        if (wrongSize) return `Size: ${wrongSize}`;
        return create.mutateAsync({ groupId, body: { name: trimmed, size_gib: asNumber(size), access_mode: access } });
      }}
    >
      <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
      <NumberInput
        label="Size (GiB)"
        value={size}
        onChange={setSize}
        min={VOLUME_SIZE.min}
        max={VOLUME_SIZE.max}
        error={outOfRange(size, VOLUME_SIZE)}
      />
      <div>
        <Text size="sm" fw={500} mb={4}>
          Access
        </Text>
        <SegmentedControl
          aria-label="Access"
          value={access}
          onChange={(value) => setAccess(value as NonNullable<AccessMode>)}
          data={Object.entries(ACCESS_LABELS).map(([value, label]) => ({ value, label }))}
        />
        <Text size="xs" c="dimmed" mt={4}>
          Read-only volumes are mounted read-only in every session.
        </Text>
      </div>
    </FormModal>
  );
}

function DeleteSharedVolume({ volume, groupId }: { volume: VolumeOut; groupId: string }) {
  const remove = useDeleteGroupVolume();
  const inUse = volume.used_by.length > 0;
  return (
    <ConfirmButton
      label="Delete"
      title="Delete shared volume"
      message={
        inUse
          ? `${volume.name} is used by ${volume.used_by.length} session(s); they must stop before it can be deleted.`
          : `Delete ${volume.name} (${volume.size_gib} GiB)? Everything saved in it is lost for every member.`
      }
      confirmLabel="Delete volume"
      disabled={inUse}
      onConfirm={() => remove.mutateAsync({ groupId, volumeId: volume.id })}
    />
  );
}

function GroupVolumes({ groupId, groupName }: { groupId: string; groupName: string }) {
  const volumes = useGroupVolumes(groupId);
  const [adding, setAdding] = useState(false);
  const items = volumes.data?.items ?? [];
  return (
    <Stack gap="sm">
      <Group justify="flex-end">
        <Button onClick={() => setAdding(true)}>New shared volume</Button>
      </Group>
      <QueryState query={volumes} isEmpty={items.length === 0} empty={`${groupName} has no shared volumes.`}>
        <VolumeTable
          volumes={items}
          label="Shared volumes"
          minWidth={760}
          actions={(volume) => <DeleteSharedVolume volume={volume} groupId={groupId} />}
        />
      </QueryState>
      <NewVolumeModal groupId={groupId} groupName={groupName} opened={adding} onClose={() => setAdding(false)} />
    </Stack>
  );
}

/** The shared volumes of a group the admin administers: created and deleted here. */
export function GroupVolumesSection() {
  const groups = useActionableGroups(ADMINISTERS_GROUP);
  const [chosen, setChosen] = useState<string | null>(null);
  const first = groups.options[0]?.items[0]?.value ?? null;
  const groupId = chosen ?? first;
  return (
    <QueryState
      query={{ isPending: groups.isPending && first === null, error: null }}
      isEmpty={first === null}
      empty="You administer no group."
    >
      <Stack gap="md">
        <Select
          label="Group"
          data={groups.options}
          value={groupId}
          onChange={(value) => value && setChosen(value)}
          allowDeselect={false}
          searchable
          maw={360}
        />
        {groupId && <GroupVolumes key={groupId} groupId={groupId} groupName={groups.names.get(groupId) ?? ''} />}
      </Stack>
    </QueryState>
  );
}
