import { Badge, Button, Group, Select, Stack, Text, Title } from '@mantine/core';
import { DatePickerInput } from '@mantine/dates';
import { useForm } from '@mantine/form';
import { useState } from 'react';
import { useMembers, usePutMember, useRemoveMember } from '../../api/hooks/members';
import type { MembershipOut, MembershipRole } from '../../api/types';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate, toDateInput } from '../../ui/format';
import { FormModal } from '../../ui/FormModal';
import { PagedTable } from '../../ui/PagedTable';
import { useTableState } from '../../ui/tableState';
import { UserPicker } from '../users/UserPicker';
import { memberRequest, todayInput, validateMember, type MemberValues } from './memberForm';

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
  const initialValues: MemberValues = {
    userId: editing?.user_id ?? null,
    role: editing?.role ?? 'member',
    expires: toDateInput(editing?.expires_at),
  };
  const today = todayInput();
  const form = useForm<MemberValues>({ initialValues, validate: validateMember(today) });

  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={editing ? `Change ${editing.user_name}` : `Add a member to ${groupName}`}
      submitLabel={editing ? 'Save' : 'Add member'}
      form={form}
      initialValues={initialValues}
      serverFields={{ role: 'role', expires_at: 'expires' }}
      onSubmit={(values) => put.mutateAsync({ userId: values.userId!, body: memberRequest(values) })}
    >
      {editing ? (
        <Text size="sm">
          {editing.user_name} &lt;{editing.user_email}&gt;
        </Text>
      ) : (
        <UserPicker
          label="User"
          value={form.values.userId}
          onChange={(value) => form.setFieldValue('userId', value)}
          error={form.errors.userId}
        />
      )}
      <Select
        label="Role"
        data={ROLE_OPTIONS}
        value={form.values.role}
        onChange={(value) => form.setFieldValue('role', (value as MembershipRole | null) ?? 'member')}
        allowDeselect={false}
      />
      {form.values.role === 'guest' && (
        <DatePickerInput
          label="Expires on"
          description="Leave empty for guest access without an end date."
          placeholder="No end date"
          value={form.values.expires || null}
          onChange={(value) => form.setFieldValue('expires', value ?? '')}
          error={form.errors.expires}
          minDate={today}
          clearable
        />
      )}
    </FormModal>
  );
}

/** Members of one group with role, guest expiry and status. */
export function MembersSection({ groupId, groupName, canEdit }: { groupId: string; groupName: string; canEdit: boolean }) {
  const members = useMembers(groupId);
  // Members come paged by name; the other orders are the browser's, over the whole list once loaded.
  const view = useTableState({ prefix: 'members', sortable: ['name', 'email', 'role', 'expires'] });
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
        columns={[
          { id: 'name', header: 'Name', sortValue: (m) => m.user_name, cell: (m) => m.user_name },
          { id: 'email', header: 'Email', sortValue: (m) => m.user_email, cell: (m) => m.user_email },
          {
            id: 'role',
            header: 'Role',
            sortValue: (m) => m.role,
            cell: (m) => (
              <Badge variant="light" color={m.role === 'guest' ? 'grape' : 'blue'}>
                {m.role}
              </Badge>
            ),
          },
          {
            id: 'expires',
            header: 'Expires',
            sortValue: (m) => m.expires_at,
            cell: (m) => (m.expires_at ? formatDate(m.expires_at) : 'Never'),
          },
          {
            id: 'status',
            header: 'Status',
            cell: (m) => (
              <Badge variant="dot" color={m.active ? 'green' : 'gray'}>
                {m.active ? 'Active' : 'Expired'}
              </Badge>
            ),
          },
          {
            id: 'actions',
            label: 'Actions',
            cell: (member) =>
              canEdit && (
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
              ),
          },
        ]}
        rowKey={(member) => member.user_id}
        state={view}
        empty="This group has no members yet."
        striped
        aria-label="Members"
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
