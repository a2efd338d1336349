import { Alert, Button, Stack, Text } from '@mantine/core';
import { Component, type ErrorInfo, type ReactNode } from 'react';
import { useLocation } from 'react-router';
import { errorMessage } from '../api/errors';

interface BoundaryProps {
  children: ReactNode;
}

interface BoundaryState {
  error: unknown;
}

class Boundary extends Component<BoundaryProps, BoundaryState> {
  state: BoundaryState = { error: null };

  static getDerivedStateFromError(error: unknown): BoundaryState {
    return { error };
  }

  componentDidCatch(error: unknown, info: ErrorInfo) {
    console.error('A page of the console failed', error, info.componentStack);
  }

  render() {
    if (this.state.error === null) return this.props.children;
    return (
      <Stack maw={560}>
        <Alert color="red" title="This page failed" role="alert">
          <Text size="sm">{errorMessage(this.state.error)}</Text>
        </Alert>
        <Button variant="default" w="fit-content" onClick={() => this.setState({ error: null })}>
          Try again
        </Button>
      </Stack>
    );
  }
}

/**
 * Keeps a failing page from taking the whole console down: the header and navigation stay, and
 * moving to another address starts afresh.
 */
export function RouteErrorBoundary({ children }: BoundaryProps) {
  const { pathname } = useLocation();
  return <Boundary key={pathname}>{children}</Boundary>;
}
