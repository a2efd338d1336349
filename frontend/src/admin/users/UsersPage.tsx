import { Alert, Badge, Button, Group, Stack, Table, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { useUpdateUser, useUsers } from '../../api/hooks/users';
import type { UserOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate } from '../../ui/format';
import { ListState, LoadMore } from '../../ui/ListState';
import { PageHeader } from '../PageHeader';
import { CreateUserModal } from './CreateUserModal';

function StatusBadges({ user }: { user: UserOut }) {
  return (
    <Group gap={4}>
      <Badge variant="dot" color={user.active ? 'green' : 'gray'}>
        {user.active ? 'Active' : 'Inactive'}
      </Badge>
      {user.is_super_admin && (
        <Badge variant="light" color="red">
          Super admin
        </Badge>
      )}
      {user.must_change_password && (
        <Badge variant="light" color="yellow">
          Password change pending
        </Badge>
      )}
    </Group>
  );
}

export function UsersPage() {
  const { can } = useSession();
  const [search, setSearch] = useState('');
  const [q] = useDebouncedValue(search.trim(), 300);
  const users = useUsers({ q });
  const update = useUpdateUser();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<UserOut | null>(null);

  return (
    <Stack gap={0} maw={1100}>
      <PageHeader
        title="Users"
        description="People who can sign in to GShare."
        actions={<Button onClick={() => setCreating(true)}>New user</Button>}
      />
      {created && (
        <Alert color="green" mb="md" withCloseButton onClose={() => setCreated(null)} closeButtonLabel="Dismiss">
          Created {created.name} ({created.email}). They will choose a new password at first sign-in.
        </Alert>
      )}
      <TextInput label="Search users" value={search} onChange={(event) => setSearch(event.currentTarget.value)} mb="md" maw={320} />
      <ListState
        isPending={users.isPending}
        error={users.error}
        isEmpty={users.items.length === 0}
        empty={q ? 'No users match this search.' : 'No users yet.'}
        onRetry={users.refetch}
      >
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Email</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {users.items.map((user) => (
              <Table.Tr key={user.id}>
                <Table.Td>{user.name}</Table.Td>
                <Table.Td>{user.email}</Table.Td>
                <Table.Td>
                  <StatusBadges user={user} />
                </Table.Td>
                <Table.Td>{formatDate(user.created_at)}</Table.Td>
                <Table.Td>
                  {can.canSetUserActive(user) && (
                    <Group justify="flex-end">
                      <ConfirmButton
                        label={user.active ? 'Deactivate' : 'Activate'}
                        color={user.active ? 'red' : 'green'}
                        title={user.active ? 'Deactivate user' : 'Activate user'}
                        message={
                          user.active
                            ? `${user.name} will be signed out and can no longer sign in.`
                            : `${user.name} will be able to sign in again.`
                        }
                        confirmLabel={user.active ? 'Deactivate' : 'Activate'}
                        onConfirm={() => update.mutateAsync({ userId: user.id, changes: { active: !user.active } })}
                      />
                    </Group>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        <LoadMore {...users} />
      </ListState>
      <CreateUserModal opened={creating} onClose={() => setCreating(false)} onCreated={setCreated} />
    </Stack>
  );
}
