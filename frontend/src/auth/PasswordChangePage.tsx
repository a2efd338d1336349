import { Alert, Anchor, Button, Group, Stack } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useChangePassword, useLogout } from '../api/hooks/auth';
import { serverErrors } from '../ui/form';
import { SecretInput } from '../ui/SecretInput';
import { AuthCard } from './AuthCard';
import { PASSWORD_CHANGE_FIELDS, validatePasswordChange, type PasswordChangeValues } from './authForms';
import { PasswordStrength } from './PasswordStrength';
import { useSession } from './session';

export function PasswordChangePage() {
  const { me } = useSession();
  const change = useChangePassword();
  const logout = useLogout();
  const navigate = useNavigate();
  const form = useForm<PasswordChangeValues>({
    initialValues: { current: '', next: '', confirm: '' },
    validate: validatePasswordChange,
    validateInputOnBlur: true,
  });
  const [problem, setProblem] = useState<string | null>(null);

  const forced = me.must_change_password;

  const submit = ({ current, next }: PasswordChangeValues) => {
    setProblem(null);
    change.mutate(
      { current_password: current, new_password: next },
      {
        onSuccess: () => navigate('/', { replace: true }),
        onError: (error) => {
          const { onFields, rest } = serverErrors(error, PASSWORD_CHANGE_FIELDS, Object.keys(form.values));
          form.setErrors(onFields);
          setProblem(rest);
        },
      },
    );
  };

  const signOut = () => logout.mutate(undefined, { onSettled: () => navigate('/sign-in', { replace: true }) });

  return (
    <AuthCard
      title="Change your password"
      subtitle={forced ? 'You need to choose a new password before you can continue.' : `Signed in as ${me.user.email}`}
    >
      <form onSubmit={form.onSubmit(submit)} noValidate>
        <Stack>
          <SecretInput
            label="Current password"
            autoComplete="current-password"
            {...form.getInputProps('current')}
            autoFocus
          />
          <SecretInput
            label="New password"
            autoComplete="new-password"
            {...form.getInputProps('next')}
          />
          <PasswordStrength password={form.values.next} email={me.user.email} name={me.user.name} />
          <SecretInput
            label="Confirm new password"
            autoComplete="new-password"
            {...form.getInputProps('confirm')}
          />
          {problem && (
            <Alert color="red" role="alert">
              {problem}
            </Alert>
          )}
          <Button type="submit" loading={change.isPending} fullWidth>
            Change password
          </Button>
          <Group justify="space-between">
            {forced ? (
              <span />
            ) : (
              <Anchor component={Link} to="/" size="sm">
                Back to the console
              </Anchor>
            )}
            <Button variant="subtle" size="xs" onClick={signOut} loading={logout.isPending}>
              Sign out
            </Button>
          </Group>
        </Stack>
      </form>
    </AuthCard>
  );
}
