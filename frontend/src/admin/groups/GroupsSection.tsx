import { Anchor, Button, Group, Stack, Title } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import { useCreateGroup, useDeleteGroup, useGroups, useRenameGroup } from '../../api/hooks/groups';
import type { GroupOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { formatDate } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { useTableState } from '../../ui/tableState';
import { NameModal } from '../../ui/NameModal';
import { RenameDeleteActions } from '../../ui/RenameDeleteActions';

/** Groups of one organization: list, create, rename, delete. */
export function GroupsSection({ orgId, heading = 'Groups' }: { orgId: string; heading?: string }) {
  const { can } = useSession();
  const groups = useGroups(orgId);
  // An organization's groups are few and paged by name: the browser sorts the whole list once loaded.
  const view = useTableState({ prefix: 'groups', sortable: ['name', 'created'] });
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
        columns={[
          {
            id: 'name',
            header: 'Name',
            sortValue: (group) => group.name,
            cell: (group) => (
              <Anchor component={Link} to={`/admin/groups/${group.id}`}>
                {group.name}
              </Anchor>
            ),
          },
          {
            id: 'created',
            header: 'Created',
            sortValue: (group) => group.created_at,
            cell: (group) => formatDate(group.created_at),
          },
          {
            id: 'actions',
            label: 'Actions',
            cell: (group) => (
              <RenameDeleteActions
                noun="group"
                name={group.name}
                deleteNote="Only a group without members can be deleted."
                onRename={can('group.update', { orgId, groupId: group.id }) ? () => setRenaming(group) : undefined}
                onDelete={
                  can('group.delete', { orgId, groupId: group.id }) ? () => deleteGroup.mutateAsync(group.id) : undefined
                }
              />
            ),
          },
        ]}
        rowKey={(group) => group.id}
        state={view}
        empty="This organization has no groups yet."
        striped
        highlightOnHover
        aria-label="Groups"
      />
      <NameModal
        opened={creating}
        onClose={() => setCreating(false)}
        title="New group"
        submitLabel="Create group"
        onSubmit={(name) => createGroup.mutateAsync(name)}
        done={(name) => `Created the group ${name}.`}
      />
      <NameModal
        opened={renaming !== null}
        onClose={() => setRenaming(null)}
        title="Rename group"
        submitLabel="Save"
        initialName={renaming?.name}
        onSubmit={(name) => renameGroup.mutateAsync({ groupId: renaming!.id, name })}
        done={(name) => `Renamed the group to ${name}.`}
      />
    </Stack>
  );
}
