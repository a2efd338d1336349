import { Alert, Anchor, Button, Group, Stack } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { errorMessage } from '../api/errors';
import { useChangePassword, useLogout } from '../api/hooks/auth';
import { SecretInput } from '../ui/SecretInput';
import { AuthCard } from './AuthCard';
import { PasswordStrength } from './PasswordStrength';
import { useSession } from './session';

export function PasswordChangePage() {
  const { me } = useSession();
  const change = useChangePassword();
  const logout = useLogout();
  const navigate = useNavigate();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [submitted, setSubmitted] = useState(false);

  const forced = me.must_change_password;
  const mismatch = confirm.length > 0 && confirm !== next;
  const missing = !current || !next || !confirm;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setSubmitted(true);
    if (missing || mismatch) return;
    change.mutate(
      { current_password: current, new_password: next },
      { onSuccess: () => navigate('/', { replace: true }) },
    );
  };

  const signOut = () => logout.mutate(undefined, { onSettled: () => navigate('/sign-in', { replace: true }) });

  return (
    <AuthCard
      title="Change your password"
      subtitle={forced ? 'You need to choose a new password before you can continue.' : `Signed in as ${me.user.email}`}
    >
      <form onSubmit={submit} noValidate>
        <Stack>
          <SecretInput
            label="Current password"
            autoComplete="current-password"
            value={current}
            onChange={(event) => setCurrent(event.currentTarget.value)}
            error={submitted && !current ? 'Enter your current password.' : undefined}
            autoFocus
          />
          <SecretInput
            label="New password"
            autoComplete="new-password"
            value={next}
            onChange={(event) => setNext(event.currentTarget.value)}
            error={submitted && !next ? 'Choose a new password.' : undefined}
          />
          <PasswordStrength password={next} email={me.user.email} name={me.user.name} />
          <SecretInput
            label="Confirm new password"
            autoComplete="new-password"
            value={confirm}
            onChange={(event) => setConfirm(event.currentTarget.value)}
            error={mismatch ? 'Passwords do not match.' : submitted && !confirm ? 'Repeat the new password.' : undefined}
          />
          {change.isError && (
            <Alert color="red" role="alert">
              {errorMessage(change.error)}
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
