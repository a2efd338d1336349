import { Alert, Button, Group, Modal, Stack, Table, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { errorMessage } from '../api/errors';
import type { AdminGrants } from '../api/hooks/admins';
import { ConfirmButton } from '../ui/ConfirmButton';
import { formatDate } from '../ui/format';
import { PagedTable } from '../ui/PagedTable';
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
        empty="No admins yet."
        striped
        head={
          <>
            <Table.Th>Name</Table.Th>
            <Table.Th>Email</Table.Th>
            <Table.Th>Since</Table.Th>
            <Table.Th aria-label="Actions" />
          </>
        }
        row={(admin) => (
          <Table.Tr key={admin.user_id}>
            <Table.Td>{admin.user_name}</Table.Td>
            <Table.Td>{admin.user_email}</Table.Td>
            <Table.Td>{formatDate(admin.created_at)}</Table.Td>
            <Table.Td>
              {canEdit && (
                <Group justify="flex-end">
                  <ConfirmButton
                    label="Remove"
                    title="Remove admin"
                    message={`Remove ${admin.user_name} as an admin of ${scopeName}?`}
                    confirmLabel="Remove admin"
                    onConfirm={() => revoke.mutateAsync(admin.user_id)}
                  />
                </Group>
              )}
            </Table.Td>
          </Table.Tr>
        )}
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
