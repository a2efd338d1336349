import { Select, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconUserPlus } from '@tabler/icons-react';
import { useMemo } from 'react';
import { useCreateUser } from '../../api/hooks/users';
import type { MembershipRole, UserOut } from '../../api/types';
import { PasswordStrength } from '../../auth/PasswordStrength';
import { useSession } from '../../auth/session';
import { FormModal } from '../../ui/FormModal';
import { SecretInput } from '../../ui/SecretInput';
import { useActionableGroups } from '../actionableGroups';
import { NEW_USER, NEW_USER_FIELDS, newUserRequest, validateNewUser, type NewUserValues } from './userForm';

const ROLE_OPTIONS = [
  { value: 'member', label: 'Member' },
  { value: 'guest', label: 'Guest' },
];

interface CreateUserModalProps {
  opened: boolean;
  onClose: () => void;
  onCreated: (user: UserOut) => void;
}

export function CreateUserModal({ opened, onClose, onCreated }: CreateUserModalProps) {
  const { can } = useSession();
  // Only someone allowed to create users outside any group may leave the group empty.
  const mustPickGroup = !can('user.create');
  const create = useCreateUser();
  const groups = useActionableGroups('user.create', { enabled: opened });
  const validate = useMemo(() => validateNewUser({ mustPickGroup }), [mustPickGroup]);
  const form = useForm<NewUserValues>({ initialValues: NEW_USER, validate, validateInputOnBlur: true });

  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="New user"
      submitLabel="Create user"
      submitIcon={<IconUserPlus size={16} aria-hidden />}
      form={form}
      initialValues={NEW_USER}
      serverFields={NEW_USER_FIELDS}
      onSubmit={async (values) => onCreated(await create.mutateAsync(newUserRequest(values)))}
    >
      <TextInput label="Email" type="email" autoComplete="off" {...form.getInputProps('email')} data-autofocus />
      <TextInput label="Name" autoComplete="off" {...form.getInputProps('name')} />
      <SecretInput
        label="Initial password"
        description="The user must change it at first sign-in."
        autoComplete="new-password"
        {...form.getInputProps('password')}
      />
      <PasswordStrength password={form.values.password} email={form.values.email.trim()} name={form.values.name.trim()} />
      <Select
        label="Group"
        placeholder={groups.isPending ? 'Loading groups…' : mustPickGroup ? 'Choose a group' : 'No group'}
        data={groups.options}
        {...form.getInputProps('groupId')}
        clearable={!mustPickGroup}
        searchable
        nothingFoundMessage="No groups available"
      />
      <Select
        label="Role"
        description="Applies to the chosen group."
        data={ROLE_OPTIONS}
        value={form.values.role}
        onChange={(value) => form.setFieldValue('role', (value as MembershipRole | null) ?? 'member')}
        allowDeselect={false}
      />
    </FormModal>
  );
}
