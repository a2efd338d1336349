import { Alert, Button, Group, Modal, Stack, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { errorMessage } from '../api/errors';
import type { AdminGrants } from '../api/hooks/admins';
import { ConfirmButton } from '../ui/ConfirmButton';
import { formatDate } from '../ui/format';
import { PagedTable } from '../ui/PagedTable';
import { useTableState } from '../ui/tableState';
import { UserPicker } from './users/UserPicker';

interface AdminGrantsSectionProps {
  heading: string;
  scopeName: string;
  grants: AdminGrants;
  canEdit: boolean;
}

/** Admins of one organization or group, with grant and revoke. */
export function AdminGrantsSection({ heading, scopeName, grants, canEdit }: AdminGrantsSectionProps) {
  const { list, grant, revoke } = grants;
  // A scope has a handful of admins: the browser sorts the whole list once it is loaded.
  const view = useTableState({ prefix: 'admins', sortable: ['name', 'email', 'since'] });
  const [adding, setAdding] = useState(false);
  const [userId, setUserId] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  const close = () => {
    setAdding(false);
    setUserId(null);
    setProblem(null);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!userId) {
      setProblem('Choose a user.');
      return;
    }
    grant.mutate(userId, { onSuccess: close, onError: (error) => setProblem(errorMessage(error)) });
  };

  return (
    <Stack gap="sm">
      <Group justify="space-between">
        <Title order={3} size="h4">
          {heading}
        </Title>
        {canEdit && (
          <Button size="sm" variant="light" onClick={() => setAdding(true)}>
            Add admin
          </Button>
        )}
      </Group>
      <PagedTable
        list={list}
        columns={[
          { id: 'name', header: 'Name', sortValue: (admin) => admin.user_name, cell: (admin) => admin.user_name },
          { id: 'email', header: 'Email', sortValue: (admin) => admin.user_email, cell: (admin) => admin.user_email },
          { id: 'since', header: 'Since', sortValue: (admin) => admin.created_at, cell: (admin) => formatDate(admin.created_at) },
          {
            id: 'actions',
            label: 'Actions',
            cell: (admin) =>
              canEdit && (
                <Group justify="flex-end">
                  <ConfirmButton
                    label="Remove"
                    title="Remove admin"
                    message={`Remove ${admin.user_name} as an admin of ${scopeName}?`}
                    confirmLabel="Remove admin"
                    onConfirm={() => revoke.mutateAsync(admin.user_id)}
                  />
                </Group>
              ),
          },
        ]}
        rowKey={(admin) => admin.user_id}
        state={view}
        empty="No admins yet."
        striped
        aria-label={heading}
      />
      <Modal opened={adding} onClose={close} title={`Add an admin to ${scopeName}`} centered>
        <form onSubmit={submit} noValidate>
          <UserPicker label="User" value={userId} onChange={setUserId} />
          {problem && (
            <Alert color="red" mt="md" role="alert">
              {problem}
            </Alert>
          )}
          <Group justify="flex-end" mt="lg">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={grant.isPending}>
              Grant admin
            </Button>
          </Group>
        </form>
      </Modal>
    </Stack>
  );
}
