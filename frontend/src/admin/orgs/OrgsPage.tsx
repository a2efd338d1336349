import { Anchor, Button, Stack, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { Link } from 'react-router';
import { useCreateOrg, useDeleteOrg, useOrgs, useRenameOrg } from '../../api/hooks/orgs';
import type { OrgOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { formatDate } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { useTableState } from '../../ui/tableState';
import { NameModal } from '../../ui/NameModal';
import { RenameDeleteActions } from '../../ui/RenameDeleteActions';
import { PageHeader } from '../../ui/PageHeader';

export function OrgsPage() {
  const { can } = useSession();
  // Organizations come paged by name; sorting by name or date is the browser's, over the whole
  // list once it is loaded: there are few, and the server's order already answers most needs.
  const view = useTableState({ sortable: ['name', 'created'], filters: ['q'] });
  const [search, setSearch] = useState(view.filter('q'));
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
        onChange={(event) => {
          setSearch(event.currentTarget.value);
          view.setFilter('q', event.currentTarget.value.trim());
        }}
        mb="md"
        maw={320}
      />
      <PagedTable
        list={orgs}
        columns={[
          {
            id: 'name',
            header: 'Name',
            sortValue: (org) => org.name,
            cell: (org) => (
              <Anchor component={Link} to={`/admin/orgs/${org.id}`}>
                {org.name}
              </Anchor>
            ),
          },
          { id: 'created', header: 'Created', sortValue: (org) => org.created_at, cell: (org) => formatDate(org.created_at) },
          {
            id: 'actions',
            label: 'Actions',
            cell: (org) => (
              <RenameDeleteActions
                noun="organization"
                name={org.name}
                deleteNote="Only an organization without groups can be deleted."
                onRename={can('org.update', { orgId: org.id }) ? () => setRenaming(org) : undefined}
                onDelete={can('org.delete', { orgId: org.id }) ? () => deleteOrg.mutateAsync(org.id) : undefined}
              />
            ),
          },
        ]}
        rowKey={(org) => org.id}
        state={view}
        empty={q ? 'No organizations match this search.' : 'No organizations yet.'}
        striped
        highlightOnHover
        aria-label="Organizations"
      />
      <NameModal
        opened={creating}
        onClose={() => setCreating(false)}
        title="New organization"
        submitLabel="Create organization"
        onSubmit={(name) => createOrg.mutateAsync(name)}
        done={(name) => `Created the organization ${name}.`}
      />
      <NameModal
        opened={renaming !== null}
        onClose={() => setRenaming(null)}
        title="Rename organization"
        submitLabel="Save"
        initialName={renaming?.name}
        onSubmit={(name) => renameOrg.mutateAsync({ orgId: renaming!.id, name })}
        done={(name) => `Renamed the organization to ${name}.`}
      />
    </Stack>
  );
}
