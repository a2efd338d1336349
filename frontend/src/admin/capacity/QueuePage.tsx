import { Stack } from '@mantine/core';
import { PendingPreemptions } from '../../queue/PendingPreemptions';
import { QueueTable } from '../../queue/QueueTable';
import { PageHeader } from '../../ui/PageHeader';

export function QueuePage() {
  return (
    <Stack maw={1400} gap="lg">
      <PageHeader
        title="Queue"
        description="Every admission request in the groups you administer; queued ones in priority order by position."
      />
      <QueueTable scope="all" />
      <PendingPreemptions />
    </Stack>
  );
}
