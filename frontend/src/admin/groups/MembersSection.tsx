import { Alert, Badge, Button, Group, Modal, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { errorMessage } from '../../api/errors';
import { useMembers, usePutMember, useRemoveMember } from '../../api/hooks/members';
import type { MembershipOut, MembershipRole } from '../../api/types';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate, fromDateInput, toDateInput } from '../../ui/format';
import { PagedTable } from '../../ui/PagedTable';
import { UserPicker } from '../users/UserPicker';

const ROLE_OPTIONS = [
  { value: 'member', label: 'Member' },
  { value: 'guest', label: 'Guest' },
];

interface MemberModalProps {
  groupId: string;
  groupName: string;
  opened: boolean;
  editing: MembershipOut | null;
  onClose: () => void;
}

function MemberModal({ groupId, groupName, opened, editing, onClose }: MemberModalProps) {
  const put = usePutMember(groupId);
  const [userId, setUserId] = useState<string | null>(null);
  const [role, setRole] = useState<MembershipRole>('member');
  const [expires, setExpires] = useState('');
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    if (!opened) return;
    setUserId(editing?.user_id ?? null);
    setRole(editing?.role ?? 'member');
    setExpires(toDateInput(editing?.expires_at));
    setProblem(null);
  }, [opened, editing]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!userId) {
      setProblem('Choose a user.');
      return;
    }
    const expiresAt = role === 'guest' ? fromDateInput(expires) : null;
    put.mutate(
      { userId, body: { role, expires_at: expiresAt } },
      { onSuccess: onClose, onError: (error) => setProblem(errorMessage(error)) },
    );
  };

  return (
    <Modal opened={opened} onClose={onClose} title={editing ? `Change ${editing.user_name}` : `Add a member to ${groupName}`} centered>
      <form onSubmit={submit} noValidate>
        <Stack>
          {editing ? (
            <Text size="sm">
              {editing.user_name} &lt;{editing.user_email}&gt;
            </Text>
          ) : (
            <UserPicker label="User" value={userId} onChange={setUserId} />
          )}
          <Select
            label="Role"
            data={ROLE_OPTIONS}
            value={role}
            onChange={(value) => setRole((value as MembershipRole | null) ?? 'member')}
            allowDeselect={false}
          />
          {role === 'guest' && (
            <TextInput
              type="date"
              label="Expires on"
              description="Leave empty for guest access without an end date."
              value={expires}
              onChange={(event) => setExpires(event.currentTarget.value)}
            />
          )}
          {problem && (
            <Alert color="red" role="alert">
              {problem}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={put.isPending}>
              {editing ? 'Save' : 'Add member'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Members of one group with role, guest expiry and status. */
export function MembersSection({ groupId, groupName, canEdit }: { groupId: string; groupName: string; canEdit: boolean }) {
  const members = useMembers(groupId);
  const remove = useRemoveMember(groupId);
  const [modal, setModal] = useState<{ editing: MembershipOut | null } | null>(null);

  return (
    <Stack gap="sm">
      <Group justify="space-between">
        <Title order={3} size="h4">
          Members
        </Title>
        {canEdit && (
          <Button size="sm" onClick={() => setModal({ editing: null })}>
            Add member
          </Button>
        )}
      </Group>
      <PagedTable
        list={members}
        empty="This group has no members yet."
        striped
        head={
          <>
            <Table.Th>Name</Table.Th>
            <Table.Th>Email</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>Expires</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th aria-label="Actions" />
          </>
        }
        row={(member) => (
          <Table.Tr key={member.user_id}>
            <Table.Td>{member.user_name}</Table.Td>
            <Table.Td>{member.user_email}</Table.Td>
            <Table.Td>
              <Badge variant="light" color={member.role === 'guest' ? 'grape' : 'blue'}>
                {member.role}
              </Badge>
            </Table.Td>
            <Table.Td>{member.expires_at ? formatDate(member.expires_at) : 'Never'}</Table.Td>
            <Table.Td>
              <Badge variant="dot" color={member.active ? 'green' : 'gray'}>
                {member.active ? 'Active' : 'Expired'}
              </Badge>
            </Table.Td>
            <Table.Td>
              {canEdit && (
                <Group gap="xs" justify="flex-end" wrap="nowrap">
                  <Button size="xs" variant="default" onClick={() => setModal({ editing: member })}>
                    Change
                  </Button>
                  <ConfirmButton
                    label="Remove"
                    title="Remove member"
                    message={`Remove ${member.user_name} from ${groupName}?`}
                    confirmLabel="Remove member"
                    onConfirm={() => remove.mutateAsync(member.user_id)}
                  />
                </Group>
              )}
            </Table.Td>
          </Table.Tr>
        )}
      />
      <MemberModal
        groupId={groupId}
        groupName={groupName}
        opened={modal !== null}
        editing={modal?.editing ?? null}
        onClose={() => setModal(null)}
      />
    </Stack>
  );
}
