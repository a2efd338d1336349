import { Alert, Button, Group, Modal, Select, Stack, TextInput } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { errorMessage } from '../../api/errors';
import { useCreateUser } from '../../api/hooks/users';
import type { MembershipRole, UserOut } from '../../api/types';
import { PasswordStrength } from '../../auth/PasswordStrength';
import { useSession } from '../../auth/session';
import { SecretInput } from '../../ui/SecretInput';
import { useActionableGroups } from '../actionableGroups';

const ROLE_OPTIONS = [
  { value: 'member', label: 'Member' },
  { value: 'guest', label: 'Guest' },
];

interface CreateUserModalProps {
  opened: boolean;
  onClose: () => void;
  onCreated: (user: UserOut) => void;
}

const EMPTY = { email: '', name: '', password: '', groupId: null as string | null, role: 'member' as MembershipRole };

export function CreateUserModal({ opened, onClose, onCreated }: CreateUserModalProps) {
  const { can } = useSession();
  // Only someone allowed to create users outside any group may leave the group empty.
  const mustPickGroup = !can('user.create');
  const create = useCreateUser();
  const groups = useActionableGroups('user.create', { enabled: opened });
  const [form, setForm] = useState(EMPTY);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    if (opened) {
      setForm(EMPTY);
      setProblem(null);
    }
  }, [opened]);

  const set = <K extends keyof typeof EMPTY>(key: K, value: (typeof EMPTY)[K]) =>
    setForm((current) => ({ ...current, [key]: value }));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const email = form.email.trim();
    const name = form.name.trim();
    if (!email || !name || !form.password) {
      setProblem('Email, name and initial password are required.');
      return;
    }
    if (mustPickGroup && !form.groupId) {
      setProblem('Choose a group you administer for the new user.');
      return;
    }
    setProblem(null);
    create.mutate(
      {
        email,
        name,
        initial_password: form.password,
        group_id: form.groupId,
        role: form.groupId ? form.role : null,
      },
      {
        onSuccess: (user) => {
          onCreated(user);
          onClose();
        },
        onError: (error) => setProblem(errorMessage(error)),
      },
    );
  };

  return (
    <Modal opened={opened} onClose={onClose} title="New user" centered size="md">
      <form onSubmit={submit} noValidate>
        <Stack>
          <TextInput
            label="Email"
            type="email"
            autoComplete="off"
            value={form.email}
            onChange={(event) => set('email', event.currentTarget.value)}
            data-autofocus
          />
          <TextInput label="Name" autoComplete="off" value={form.name} onChange={(event) => set('name', event.currentTarget.value)} />
          <SecretInput
            label="Initial password"
            description="The user must change it at first sign-in."
            autoComplete="new-password"
            value={form.password}
            onChange={(event) => set('password', event.currentTarget.value)}
          />
          <PasswordStrength password={form.password} email={form.email.trim()} name={form.name.trim()} />
          <Select
            label="Group"
            placeholder={groups.isPending ? 'Loading groups…' : mustPickGroup ? 'Choose a group' : 'No group'}
            data={groups.options}
            value={form.groupId}
            onChange={(value) => set('groupId', value)}
            clearable={!mustPickGroup}
            searchable
            nothingFoundMessage="No groups available"
          />
          <Select
            label="Role"
            description="Applies to the chosen group."
            data={ROLE_OPTIONS}
            value={form.role}
            onChange={(value) => set('role', (value as MembershipRole | null) ?? 'member')}
            allowDeselect={false}
          />
          {problem && (
            <Alert color="red" role="alert">
              {problem}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending}>
              Create user
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
