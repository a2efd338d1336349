import { Stack, Tabs } from '@mantine/core';
import { useSearchParams } from 'react-router';
import { PageHeader } from '../../ui/PageHeader';
import { AdminSessionsTable } from './AdminSessionsTable';
import { useSession } from '../../auth/session';
import { WORKER_HEALTH } from './access';
import { GroupVolumesSection } from './GroupVolumesSection';
import { WorkerHealthSection } from './WorkerHealthSection';

const TABS = ['sessions', 'volumes', 'worker'] as const;
type Tab = (typeof TABS)[number];

export function AdminSessionsPage() {
  const [params, setParams] = useSearchParams();
  const requested = params.get('tab');
  const { canSomewhere } = useSession();
  const seesWorker = canSomewhere(WORKER_HEALTH);
  const tab: Tab = TABS.find((t) => t === requested && (t !== 'worker' || seesWorker)) ?? 'sessions';
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader title="Sessions" description="Sessions in the groups you administer, and their shared volumes." />
      <Tabs
        value={tab}
        onChange={(value) => setParams(value && value !== 'sessions' ? { tab: value } : {}, { replace: true })}
        keepMounted={false}
      >
        <Tabs.List mb="md">
          <Tabs.Tab value="sessions">Sessions</Tabs.Tab>
          <Tabs.Tab value="volumes">Shared volumes</Tabs.Tab>
          {seesWorker && <Tabs.Tab value="worker">Worker</Tabs.Tab>}
        </Tabs.List>
        <Tabs.Panel value="sessions">
          <AdminSessionsTable />
        </Tabs.Panel>
        <Tabs.Panel value="volumes">
          <GroupVolumesSection />
        </Tabs.Panel>
        {seesWorker && (
          <Tabs.Panel value="worker">
            <WorkerHealthSection />
          </Tabs.Panel>
        )}
      </Tabs>
    </Stack>
  );
}
