import { Button, Group, NumberInput, SegmentedControl, Select, Stack, Text, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { useCreateGroupVolume, useDeleteGroupVolume, useGroupVolumes, type VolumeOut } from '../../api/hooks/sessions';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { QueryState } from '../../ui/QueryState';
import { VolumeTable } from '../../sessions/VolumeTable';
import { useActionableGroups } from '../actionableGroups';
import { FormModal } from '../../ui/FormModal';
import { ADMINISTERS_GROUP } from './access';
import { LIMITS, NEW_VOLUME, validateVolume, VOLUME_FIELDS, volumeRequest, type AccessMode, type VolumeValues } from './groupVolumeForm';

const ACCESS_LABELS: Record<AccessMode, string> = {
  ReadWriteMany: 'Read-write',
  ReadOnlyMany: 'Read-only',
};

interface NewVolumeModalProps {
  groupId: string;
  groupName: string;
  opened: boolean;
  onClose: () => void;
}

function NewVolumeModal({ groupId, groupName, opened, onClose }: NewVolumeModalProps) {
  const create = useCreateGroupVolume();
  const form = useForm<VolumeValues>({ initialValues: NEW_VOLUME, validate: validateVolume, validateInputOnBlur: true });
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`New shared volume for ${groupName}`}
      submitLabel="Create volume"
      submitIcon={<IconPlus size={16} aria-hidden />}
      form={form}
      initialValues={NEW_VOLUME}
      serverFields={VOLUME_FIELDS}
      onSubmit={(values) => create.mutateAsync({ groupId, body: volumeRequest(values) })}
      done={(values) => `Created ${values.name.trim()} for ${groupName}.`}
    >
      <TextInput
        label="Name"
        description={`Up to ${LIMITS.name} lower-case letters, digits and dashes`}
        {...form.getInputProps('name')}
        data-autofocus
      />
      <NumberInput
        label="Size (GiB)"
        description={`${LIMITS.sizeGiB.min} to ${LIMITS.sizeGiB.max.toLocaleString('en')}, whole GiB`}
        {...form.getInputProps('sizeGiB')}
        min={LIMITS.sizeGiB.min}
        max={LIMITS.sizeGiB.max}
        clampBehavior="none"
        allowDecimal={false}
      />
      <div>
        <Text size="sm" fw={500} mb={4}>
          Access
        </Text>
        <SegmentedControl
          aria-label="Access"
          value={form.values.access}
          onChange={(value) => form.setFieldValue('access', value as AccessMode)}
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
        <Button leftSection={<IconPlus size={16} aria-hidden />} onClick={() => setAdding(true)}>
          New shared volume
        </Button>
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
