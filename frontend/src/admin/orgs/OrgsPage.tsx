import { Anchor, Button, Group, Stack, Table, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { Link } from 'react-router';
import { useCreateOrg, useDeleteOrg, useOrgs, useRenameOrg } from '../../api/hooks/orgs';
import type { OrgOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate } from '../../ui/format';
import { ListState, LoadMore } from '../../ui/ListState';
import { NameModal } from '../../ui/NameModal';
import { PageHeader } from '../PageHeader';

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
        actions={can.canCreateOrg && <Button onClick={() => setCreating(true)}>New organization</Button>}
      />
      <TextInput
        label="Search organizations"
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        mb="md"
        maw={320}
      />
      <ListState
        isPending={orgs.isPending}
        error={orgs.error}
        isEmpty={orgs.items.length === 0}
        empty={q ? 'No organizations match this search.' : 'No organizations yet.'}
        onRetry={orgs.refetch}
      >
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {orgs.items.map((org) => (
              <Table.Tr key={org.id}>
                <Table.Td>
                  <Anchor component={Link} to={`/admin/orgs/${org.id}`}>
                    {org.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>{formatDate(org.created_at)}</Table.Td>
                <Table.Td>
                  <Group gap="xs" justify="flex-end">
                    {can.canEditOrg(org.id) && (
                      <Button size="xs" variant="default" onClick={() => setRenaming(org)}>
                        Rename
                      </Button>
                    )}
                    {can.canDeleteOrg && (
                      <ConfirmButton
                        label="Delete"
                        title="Delete organization"
                        message={`Delete “${org.name}”? Only an organization without groups can be deleted.`}
                        confirmLabel="Delete organization"
                        onConfirm={() => deleteOrg.mutateAsync(org.id)}
                      />
                    )}
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        <LoadMore {...orgs} />
      </ListState>
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
