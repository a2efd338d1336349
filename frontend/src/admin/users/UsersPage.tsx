import { Alert, Badge, Button, Group, Stack, Table, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { useSetSuperAdmin, useUpdateUser, useUsers } from '../../api/hooks/users';
import type { UserOut } from '../../api/types';
import type { Action } from '../../auth/capabilities';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { PageHeader } from '../../ui/PageHeader';
import { CreateUserModal } from './CreateUserModal';
import { ResetPasswordModal } from './ResetPasswordModal';
import { LongName } from '../../ui/LongName';

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
  const { me, can, canSomewhere } = useSession();
  // The server answers whether this user lies wholly in the caller's reach; offer the action to
  // anyone who may take it somewhere, except on themself, and on a super admin only to whoever
  // may take it anywhere.
  const offers = (action: Action, user: UserOut) =>
    user.id !== me.user.id && (can(action) || (!user.is_super_admin && canSomewhere(action)));
  const [search, setSearch] = useState('');
  const [q] = useDebouncedValue(search.trim(), 300);
  const users = useUsers({ q });
  const update = useUpdateUser();
  const setSuperAdmin = useSetSuperAdmin();
  const [resetting, setResetting] = useState<UserOut | null>(null);
  const [wasReset, setWasReset] = useState<UserOut | null>(null);
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
      {wasReset && (
        <Alert color="green" mb="md" withCloseButton onClose={() => setWasReset(null)} closeButtonLabel="Dismiss">
          Reset the password of {wasReset.name} ({wasReset.email}). They are signed out and will choose a new password
          at their next sign-in.
        </Alert>
      )}
      <TextInput label="Search users" value={search} onChange={(event) => setSearch(event.currentTarget.value)} mb="md" maw={320} />
      <PagedTable
        list={users}
        empty={q ? 'No users match this search.' : 'No users yet.'}
        striped
        highlightOnHover
        head={
          <>
            <Table.Th>Name</Table.Th>
            <Table.Th>Email</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th aria-label="Actions" />
          </>
        }
        row={(user) => (
          <Table.Tr key={user.id}>
            <Table.Td maw={280}>
              <LongName name={user.name} size="sm" />
            </Table.Td>
            <Table.Td>{user.email}</Table.Td>
            <Table.Td>
              <StatusBadges user={user} />
            </Table.Td>
            <Table.Td>{formatDate(user.created_at)}</Table.Td>
            <Table.Td>
              <Group justify="flex-end" gap="xs" wrap="nowrap">
                {offers('user.reset_password', user) && (
                  <Button size="xs" variant="default" onClick={() => setResetting(user)}>
                    Reset password
                  </Button>
                )}
                {can('user.super_admin.manage') && user.id !== me.user.id && (
                  <ConfirmButton
                    label={user.is_super_admin ? 'Revoke super admin' : 'Grant super admin'}
                    color={user.is_super_admin ? 'red' : 'grape'}
                    title={user.is_super_admin ? 'Revoke super admin' : 'Grant super admin'}
                    message={
                      user.is_super_admin
                        ? `${user.name} will no longer be a super admin.`
                        : `${user.name} will be a super admin, allowed to do everything in every organization.`
                    }
                    confirmLabel={user.is_super_admin ? 'Revoke' : 'Grant'}
                    onConfirm={() => setSuperAdmin.mutateAsync({ userId: user.id, grant: !user.is_super_admin })}
                  />
                )}
                {offers('user.set_active', user) && (
                  <ConfirmButton
                    label={user.active ? 'Deactivate' : 'Activate'}
                    color={user.active ? 'red' : 'green'}
                    title={user.active ? 'Deactivate user' : 'Activate user'}
                    message={
                      user.active
                        ? `${user.name} will be signed out and can no longer sign in; their sessions are paused (their files are kept).`
                        : `${user.name} will be able to sign in again.`
                    }
                    confirmLabel={user.active ? 'Deactivate' : 'Activate'}
                    onConfirm={() => update.mutateAsync({ userId: user.id, changes: { active: !user.active } })}
                  />
                )}
              </Group>
            </Table.Td>
          </Table.Tr>
        )}
      />
      <CreateUserModal opened={creating} onClose={() => setCreating(false)} onCreated={setCreated} />
      <ResetPasswordModal user={resetting} onClose={() => setResetting(null)} onReset={setWasReset} />
    </Stack>
  );
}
