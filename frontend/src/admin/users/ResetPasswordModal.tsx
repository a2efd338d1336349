import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useEffect, useState } from 'react';
import { useResetPassword } from '../../api/hooks/users';
import type { UserOut } from '../../api/types';
import { PasswordStrength } from '../../auth/PasswordStrength';
import { serverErrors } from '../../ui/form';
import { SecretInput } from '../../ui/SecretInput';
import { validateReset, type ResetValues } from './userForm';

interface ResetPasswordModalProps {
  /** The user whose password is reset; the modal is open while set. */
  user: UserOut | null;
  onClose: () => void;
  onReset: (user: UserOut) => void;
}

/** Choose a new initial password (with the strength verdict), then confirm the reset. */
export function ResetPasswordModal({ user, onClose, onReset }: ResetPasswordModalProps) {
  const reset = useResetPassword();
  const form = useForm<ResetValues>({ initialValues: { password: '' }, validate: validateReset });
  const [confirming, setConfirming] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const { reset: clearForm } = form;

  useEffect(() => {
    if (user) {
      clearForm();
      setConfirming(false);
      setProblem(null);
    }
  }, [user, clearForm]);

  const review = () => {
    setProblem(null);
    setConfirming(true);
  };

  const confirm = () => {
    if (!user) return;
    reset.mutate(
      { userId: user.id, initialPassword: form.values.password },
      {
        onSuccess: (updated) => {
          onReset(updated);
          onClose();
        },
        // A refused password goes back to the form to be changed.
        onError: (error) => {
          const { onFields, rest } = serverErrors(error, { initial_password: 'password' }, ['password']);
          form.setErrors(onFields);
          setProblem(rest);
          setConfirming(false);
        },
      },
    );
  };

  return (
    <Modal opened={user !== null} onClose={onClose} title="Reset password" centered>
      {user && !confirming && (
        <form onSubmit={form.onSubmit(review)} noValidate>
          <Stack>
            <Text size="sm">
              Give {user.name} a new initial password. They must change it at their next sign-in.
            </Text>
            <SecretInput
              label="New initial password"
              autoComplete="new-password"
              {...form.getInputProps('password')}
              data-autofocus
            />
            <PasswordStrength password={form.values.password} email={user.email} name={user.name} />
            {problem && (
              <Alert color="red" role="alert">
                {problem}
              </Alert>
            )}
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit">Review</Button>
            </Group>
          </Stack>
        </form>
      )}
      {user && confirming && (
        <Stack>
          <Text size="sm">
            Reset the password of {user.name} ({user.email})? They are signed out everywhere at once and must choose a
            new password at their next sign-in.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setConfirming(false)} disabled={reset.isPending}>
              Back
            </Button>
            <Button color="red" onClick={confirm} loading={reset.isPending}>
              Reset password
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
