import { Alert, Button, Center, Loader, Stack } from '@mantine/core';
import { errorMessage } from '../api/errors';

export function FullPageLoader() {
  return (
    <Center h="100vh" role="status" aria-label="Loading">
      <Loader />
    </Center>
  );
}

export function FullPageError({ error, onRetry }: { error: unknown; onRetry: () => void }) {
  return (
    <Center h="100vh" p="md">
      <Stack maw={420}>
        <Alert color="red" title="The console could not load" role="alert">
          {errorMessage(error)}
        </Alert>
        <Button onClick={onRetry}>Try again</Button>
      </Stack>
    </Center>
  );
}
