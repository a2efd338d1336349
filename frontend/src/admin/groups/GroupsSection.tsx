import { Anchor, Button, Group, Stack, Table, Title } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import { useCreateGroup, useDeleteGroup, useGroups, useRenameGroup } from '../../api/hooks/groups';
import type { GroupOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { formatDate } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { NameModal } from '../../ui/NameModal';
import { RenameDeleteActions } from '../../ui/RenameDeleteActions';

/** Groups of one organization: list, create, rename, delete. */
export function GroupsSection({ orgId, heading = 'Groups' }: { orgId: string; heading?: string }) {
  const { can } = useSession();
  const groups = useGroups(orgId);
  const createGroup = useCreateGroup(orgId);
  const renameGroup = useRenameGroup();
  const deleteGroup = useDeleteGroup();
  const [creating, setCreating] = useState(false);
  const [renaming, setRenaming] = useState<GroupOut | null>(null);
  const creates = can('group.create', { orgId });

  return (
    <Stack gap="sm">
      <Group justify="space-between">
        <Title order={3} size="h4">
          {heading}
        </Title>
        {creates && (
          <Button size="sm" onClick={() => setCreating(true)}>
            New group
          </Button>
        )}
      </Group>
      <PagedTable
        list={groups}
        empty="This organization has no groups yet."
        striped
        highlightOnHover
        head={
          <>
            <Table.Th>Name</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th aria-label="Actions" />
          </>
        }
        row={(group) => (
          <Table.Tr key={group.id}>
            <Table.Td>
              <Anchor component={Link} to={`/admin/groups/${group.id}`}>
                {group.name}
              </Anchor>
            </Table.Td>
            <Table.Td>{formatDate(group.created_at)}</Table.Td>
            <Table.Td>
              <RenameDeleteActions
                noun="group"
                name={group.name}
                deleteNote="Only a group without members can be deleted."
                onRename={can('group.update', { orgId, groupId: group.id }) ? () => setRenaming(group) : undefined}
                onDelete={
                  can('group.delete', { orgId, groupId: group.id }) ? () => deleteGroup.mutateAsync(group.id) : undefined
                }
              />
            </Table.Td>
          </Table.Tr>
        )}
      />
      <NameModal
        opened={creating}
        onClose={() => setCreating(false)}
        title="New group"
        submitLabel="Create group"
        onSubmit={(name) => createGroup.mutateAsync(name)}
      />
      <NameModal
        opened={renaming !== null}
        onClose={() => setRenaming(null)}
        title="Rename group"
        submitLabel="Save"
        initialName={renaming?.name}
        onSubmit={(name) => renameGroup.mutateAsync({ groupId: renaming!.id, name })}
      />
    </Stack>
  );
}
