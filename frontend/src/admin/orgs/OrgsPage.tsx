import { Anchor, Button, Stack, Table, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { Link } from 'react-router';
import { useCreateOrg, useDeleteOrg, useOrgs, useRenameOrg } from '../../api/hooks/orgs';
import type { OrgOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { formatDate } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { NameModal } from '../../ui/NameModal';
import { RenameDeleteActions } from '../../ui/RenameDeleteActions';
import { PageHeader } from '../../ui/PageHeader';

export function OrgsPage() {
  const { can } = useSession();
  const [search, setSearch] = useState('');
  const [q] = useDebouncedValue(search.trim(), 300);
  const orgs = useOrgs(q);
  const createOrg = useCreateOrg();
  const renameOrg = useRenameOrg();
  const deleteOrg = useDeleteOrg();
  const [creating, setCreating] = useState(false);
  const [renaming, setRenaming] = useState<OrgOut | null>(null);

  return (
    <Stack gap={0} maw={960}>
      <PageHeader
        title="Organizations"
        description="Each organization holds groups of users who share GPUs."
        actions={can('org.create') && <Button onClick={() => setCreating(true)}>New organization</Button>}
      />
      <TextInput
        label="Search organizations"
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        mb="md"
        maw={320}
      />
      <PagedTable
        list={orgs}
        empty={q ? 'No organizations match this search.' : 'No organizations yet.'}
        striped
        highlightOnHover
        head={
          <>
            <Table.Th>Name</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th aria-label="Actions" />
          </>
        }
        row={(org) => (
          <Table.Tr key={org.id}>
            <Table.Td>
              <Anchor component={Link} to={`/admin/orgs/${org.id}`}>
                {org.name}
              </Anchor>
            </Table.Td>
            <Table.Td>{formatDate(org.created_at)}</Table.Td>
            <Table.Td>
              <RenameDeleteActions
                noun="organization"
                name={org.name}
                deleteNote="Only an organization without groups can be deleted."
                onRename={can('org.update', { orgId: org.id }) ? () => setRenaming(org) : undefined}
                onDelete={can('org.delete', { orgId: org.id }) ? () => deleteOrg.mutateAsync(org.id) : undefined}
              />
            </Table.Td>
          </Table.Tr>
        )}
      />
      <NameModal
        opened={creating}
        onClose={() => setCreating(false)}
        title="New organization"
        submitLabel="Create organization"
        onSubmit={(name) => createOrg.mutateAsync(name)}
      />
      <NameModal
        opened={renaming !== null}
        onClose={() => setRenaming(null)}
        title="Rename organization"
        submitLabel="Save"
        initialName={renaming?.name}
        onSubmit={(name) => renameOrg.mutateAsync({ orgId: renaming!.id, name })}
      />
    </Stack>
  );
}
