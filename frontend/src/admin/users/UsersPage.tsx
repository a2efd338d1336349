import { Alert, Badge, Button, Group, Stack, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { useSetSuperAdmin, useUpdateUser, useUsers } from '../../api/hooks/users';
import type { UserOut } from '../../api/types';
import type { Action } from '../../auth/capabilities';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate } from '../../ui/format';
import { PagedTable, type PagedColumn } from '../../ui/PagedTable';
import { useTableState } from '../../ui/tableState';
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
  // The server pages users by name and filters by `q`; the other orders are the browser's, over
  // the whole list once it is loaded (a reach of users usually fits a page or two).
  const view = useTableState({ sortable: ['name', 'email', 'created'], filters: ['q'] });
  const [search, setSearch] = useState(view.filter('q'));
  const [q] = useDebouncedValue(search.trim(), 300);
  const users = useUsers({ q });
  const update = useUpdateUser();
  const setSuperAdmin = useSetSuperAdmin();
  const [resetting, setResetting] = useState<UserOut | null>(null);
  const [wasReset, setWasReset] = useState<UserOut | null>(null);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<UserOut | null>(null);

  const columns: PagedColumn<UserOut>[] = [
    {
      id: 'name',
      header: 'Name',
      sortValue: (user) => user.name,
      cell: (user) => <LongName name={user.name} size="sm" />,
      td: { maw: 280 },
    },
    { id: 'email', header: 'Email', sortValue: (user) => user.email, cell: (user) => user.email },
    { id: 'status', header: 'Status', cell: (user) => <StatusBadges user={user} /> },
    { id: 'created', header: 'Created', sortValue: (user) => user.created_at, cell: (user) => formatDate(user.created_at) },
    { id: 'actions', label: 'Actions', cell: (user) => userActions(user) },
  ];
  const userActions = (user: UserOut) => (
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
  );

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
      <TextInput label="Search users" value={search} onChange={(event) => {
          setSearch(event.currentTarget.value);
          view.setFilter('q', event.currentTarget.value.trim());
        }}
        mb="md"
        maw={320}
      />
      <PagedTable
        list={users}
        columns={columns}
        rowKey={(user) => user.id}
        state={view}
        empty={q ? 'No users match this search.' : 'No users yet.'}
        striped
        highlightOnHover
        aria-label="Users"
      />
      <CreateUserModal opened={creating} onClose={() => setCreating(false)} onCreated={setCreated} />
      <ResetPasswordModal user={resetting} onClose={() => setResetting(null)} onReset={setWasReset} />
    </Stack>
  );
}
