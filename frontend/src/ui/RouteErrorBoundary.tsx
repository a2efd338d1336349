import { Alert, Button, Stack, Text } from '@mantine/core';
import type { ErrorInfo, ReactNode } from 'react';
import { ErrorBoundary, type FallbackProps } from 'react-error-boundary';
import { useLocation } from 'react-router';
import { errorMessage } from '../api/errors';

function PageFailed({ error, resetErrorBoundary }: FallbackProps) {
  return (
    <Stack maw={560}>
      <Alert color="red" title="This page failed" role="alert">
        <Text size="sm">{errorMessage(error)}</Text>
      </Alert>
      <Button variant="default" w="fit-content" onClick={resetErrorBoundary}>
        Try again
      </Button>
    </Stack>
  );
}

const report = (error: unknown, info: ErrorInfo) =>
  console.error('A page of the console failed', error, info.componentStack);

/**
 * Keeps a failing page from taking the whole console down: the header and navigation stay, and
 * moving to another address starts afresh.
 */
export function RouteErrorBoundary({ children }: { children: ReactNode }) {
  const { pathname } = useLocation();
  return (
    <ErrorBoundary FallbackComponent={PageFailed} onError={report} resetKeys={[pathname]}>
      {children}
    </ErrorBoundary>
  );
}
