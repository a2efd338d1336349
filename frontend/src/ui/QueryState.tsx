import { Alert, Button, Group, Loader, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { errorMessage } from '../api/errors';

/** What QueryState reads from a query (TanStack's result, or a paged list). */
export interface QueryLike {
  isPending: boolean;
  error: unknown;
  refetch?: () => unknown;
}

interface QueryStateProps {
  query: QueryLike;
  /** Whether the loaded answer holds nothing to show; `empty` is shown instead. */
  isEmpty?: boolean;
  empty?: ReactNode;
  children: ReactNode;
}

/** The loading, error (with retry) and empty states every list and detail view shares. */
export function QueryState({ query, isEmpty = false, empty = null, children }: QueryStateProps) {
  if (query.error) {
    const { refetch } = query;
    return (
      <Alert color="red" title="Could not load" role="alert">
        <Text size="sm">{errorMessage(query.error)}</Text>
        {refetch && (
          <Button mt="sm" size="xs" variant="light" color="red" onClick={() => void refetch()}>
            Retry
          </Button>
        )}
      </Alert>
    );
  }
  if (query.isPending) {
    return (
      <Group gap="xs" role="status">
        <Loader size="sm" />
        <Text size="sm" c="dimmed">
          Loading…
        </Text>
      </Group>
    );
  }
  if (isEmpty) {
    return (
      <Text c="dimmed" size="sm">
        {empty}
      </Text>
    );
  }
  return <>{children}</>;
}
