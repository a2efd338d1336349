import { Stack } from '@mantine/core';
import { PageHeader } from '../ui/PageHeader';
import { QueueTable } from './QueueTable';

export function MyRequestsPage() {
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader title="My requests" description="Your GPU session requests and where each stands in the queue." />
      <QueueTable scope="own" />
    </Stack>
  );
}
