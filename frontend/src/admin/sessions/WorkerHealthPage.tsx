import { Stack } from '@mantine/core';
import { PageHeader } from '../../ui/PageHeader';
import { WorkerHealthSection } from './WorkerHealthSection';

/** The worker's own admin entry: how its loops fare, and what they cannot do. */
export function WorkerHealthPage() {
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Worker health"
        description="Each of the worker's loops, when it last ran and succeeded, and what it could not read or finish."
      />
      <WorkerHealthSection />
    </Stack>
  );
}
