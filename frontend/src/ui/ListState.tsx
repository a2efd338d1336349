import { Alert, Button, Group, Loader, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { errorMessage } from '../api/errors';

interface ListStateProps {
  isPending: boolean;
  error: unknown;
  isEmpty: boolean;
  empty: ReactNode;
  onRetry?: () => void;
  children: ReactNode;
}

/** Loading, error and empty states shared by every list and detail view. */
export function ListState({ isPending, error, isEmpty, empty, onRetry, children }: ListStateProps) {
  if (error) {
    return (
      <Alert color="red" title="Could not load" role="alert">
        <Text size="sm">{errorMessage(error)}</Text>
        {onRetry && (
          <Button mt="sm" size="xs" variant="light" color="red" onClick={onRetry}>
            Retry
          </Button>
        )}
      </Alert>
    );
  }
  if (isPending) {
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

export function LoadMore({
  hasNextPage,
  isFetchingNextPage,
  fetchNextPage,
}: {
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => void;
}) {
  if (!hasNextPage) return null;
  return (
    <Group justify="center" mt="md">
      <Button variant="default" onClick={fetchNextPage} loading={isFetchingNextPage}>
        Load more
      </Button>
    </Group>
  );
}
