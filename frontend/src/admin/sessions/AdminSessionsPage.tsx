import { Stack, Tabs } from '@mantine/core';
import { useSearchParams } from 'react-router';
import { PageHeader } from '../../ui/PageHeader';
import { AdminSessionsTable } from './AdminSessionsTable';
import { GroupVolumesSection } from './GroupVolumesSection';

const TABS = ['sessions', 'volumes'] as const;
type Tab = (typeof TABS)[number];

export function AdminSessionsPage() {
  const [params, setParams] = useSearchParams();
  const requested = params.get('tab');
  const tab: Tab = TABS.find((t) => t === requested) ?? 'sessions';
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
        </Tabs.List>
        <Tabs.Panel value="sessions">
          <AdminSessionsTable />
        </Tabs.Panel>
        <Tabs.Panel value="volumes">
          <GroupVolumesSection />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
