import { Alert, Button, Stack, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { Navigate, useLocation } from 'react-router';
import { ApiError, errorMessage } from '../api/errors';
import { useLogin } from '../api/hooks/auth';
import { useMe } from '../api/hooks/me';
import { FullPageLoader } from '../ui/FullPage';
import { SecretInput } from '../ui/SecretInput';
import { AuthCard } from './AuthCard';
import { validateSignIn, type SignInValues } from './authForms';

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
  const form = useForm<SignInValues>({ initialValues: { email: '', password: '' }, validate: validateSignIn });

  const from = (location.state as { from?: string } | null)?.from;
  const destination = from && from !== '/sign-in' ? from : '/';

  if (me.isPending) return <FullPageLoader />;
  if (me.data) return <Navigate to={destination} replace />;

  // On success the cached session changes and the redirect above takes over.
  const submit = ({ email, password }: SignInValues) => login.mutate({ email: email.trim(), password });

  const problem = login.isError ? failureText(login.error) : null;

  return (
    <AuthCard title="Sign in">
      <form onSubmit={form.onSubmit(submit)} noValidate>
        <Stack>
          <TextInput
            label="Email"
            type="email"
            autoComplete="username"
            {...form.getInputProps('email')}
            autoFocus
          />
          <SecretInput
            label="Password"
            autoComplete="current-password"
            {...form.getInputProps('password')}
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
