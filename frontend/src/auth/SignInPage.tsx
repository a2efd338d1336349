import { Alert, Button, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Navigate, useLocation } from 'react-router';
import { ApiError, errorMessage } from '../api/errors';
import { useLogin } from '../api/hooks/auth';
import { useMe } from '../api/hooks/me';
import { FullPageLoader } from '../ui/FullPage';
import { SecretInput } from '../ui/SecretInput';
import { AuthCard } from './AuthCard';

function failureText(error: unknown): string {
  const message = errorMessage(error);
  if (error instanceof ApiError && error.retryAfter && !/\d/.test(message)) {
    return `${message} Try again in ${error.retryAfter} seconds.`;
  }
  return message;
}

export function SignInPage() {
  const me = useMe();
  const login = useLogin();
  const location = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [missing, setMissing] = useState<string | null>(null);

  const from = (location.state as { from?: string } | null)?.from;
  const destination = from && from !== '/sign-in' ? from : '/';

  if (me.isPending) return <FullPageLoader />;
  if (me.data) return <Navigate to={destination} replace />;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!email.trim() || !password) {
      setMissing('Enter your email and password.');
      return;
    }
    setMissing(null);
    // On success the cached session changes and the redirect below takes over.
    login.mutate({ email: email.trim(), password });
  };

  const problem = missing ?? (login.isError ? failureText(login.error) : null);

  return (
    <AuthCard title="Sign in">
      <form onSubmit={submit} noValidate>
        <Stack>
          <TextInput
            label="Email"
            type="email"
            autoComplete="username"
            value={email}
            onChange={(event) => setEmail(event.currentTarget.value)}
            autoFocus
          />
          <SecretInput
            label="Password"
            autoComplete="current-password"
            value={password}
            onChange={(event) => setPassword(event.currentTarget.value)}
          />
          {problem && (
            <Alert color="red" role="alert">
              {problem}
            </Alert>
          )}
          <Button type="submit" loading={login.isPending} fullWidth>
            Sign in
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}
