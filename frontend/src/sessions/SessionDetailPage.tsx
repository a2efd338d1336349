import { Anchor, Badge, Card, Group, Loader, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { lazy, Suspense } from 'react';
import { ErrorBoundary } from 'react-error-boundary';
import { Link, useParams } from 'react-router';
import { useSessionDetail, type SessionOut, type TransitionOut } from '../api/hooks/sessions';
import { useSession } from '../auth/session';
import { PageHeader } from '../ui/PageHeader';
import { formatDateTime } from '../ui/format';
import { QueryState } from '../ui/QueryState';
import { SessionActions } from './SessionActions';
import { IdleWarning, SessionFacts } from './SessionCard';
import { SessionNotice } from './SessionNotice';
import { SizingAdvice } from './SizingAdvice';
import { showsStartup, StartupSteps } from './StartupSteps';
import { cpuAndMemory, SESSION_TYPE_LABELS, StateBadge, StateWithReason } from './sessionParts';

// The charting library is large: it loads with the charts, not with the console.
const UsageCharts = lazy(() => import('./UsageCharts').then((module) => ({ default: module.UsageCharts })));

function Setup({ session }: { session: SessionOut }) {
  const { me } = useSession();
  const group = me.memberships.find((membership) => membership.group_id === session.group_id);
  return (
    <Card withBorder radius="md" padding="md">
      <Title order={3} size="h5" mb="xs">
        Setup
      </Title>
      <Stack gap={4}>
        <Text size="sm">
          {SESSION_TYPE_LABELS[session.session_type]} · <code>{session.image}</code>
        </Text>
        <Text size="sm">{cpuAndMemory(session)}</Text>
        {group && (
          <Text size="sm">
            Group {group.group_name} ({group.org_name})
          </Text>
        )}
        <Text size="sm" c="dimmed">
          Created {formatDateTime(session.created_at)}
        </Text>
      </Stack>
      <Title order={4} size="h6" mt="md" mb={4}>
        Volumes
      </Title>
      {session.volumes.length === 0 ? (
        <Text size="sm" c="dimmed">
          None.
        </Text>
      ) : (
        <Stack gap={2}>
          {session.volumes.map((volume) => (
            <Text key={volume.volume_id} size="sm">
              {volume.name} ({volume.kind}) at <code>{volume.mount_path}</code>
              {volume.read_only ? ', read-only' : ''}
            </Text>
          ))}
        </Stack>
      )}
    </Card>
  );
}

function History({ transitions }: { transitions: TransitionOut[] }) {
  if (transitions.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        No state changes yet.
      </Text>
    );
  }
  return (
    <Table.ScrollContainer minWidth={640}>
      <Table striped aria-label="State history">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Time</Table.Th>
            <Table.Th>From</Table.Th>
            <Table.Th>To</Table.Th>
            <Table.Th>Reason</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {transitions.map((transition, index) => (
            <Table.Tr key={`${transition.at}-${index}`}>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(transition.at)}</Table.Td>
              <Table.Td>{transition.from_state ? <StateBadge state={transition.from_state} /> : '—'}</Table.Td>
              <Table.Td>
                <StateBadge state={transition.to_state} />
              </Table.Td>
              <Table.Td>{transition.reason || '—'}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

export function SessionDetailPage() {
  const { sessionId = '' } = useParams();
  const session = useSessionDetail(sessionId);
  const data = session.data;
  return (
    <Stack maw={1100}>
      <Anchor component={Link} to="/sessions" size="sm">
        ← Sessions
      </Anchor>
      <QueryState query={session}>
        {data && (
          <Stack gap="lg">
            <PageHeader
              title={
                <Group gap="sm">
                  {data.name}
                  {data.billing && (
                    <Badge variant="dot" color="green">
                      billing
                    </Badge>
                  )}
                </Group>
              }
              description={`${SESSION_TYPE_LABELS[data.session_type]} session`}
            />
            <StateWithReason session={data} />
            <SessionNotice session={data} />
            {(showsStartup(data) || (data.state === 'running' && (data.startup_steps ?? []).length > 0)) && (
              <Card withBorder radius="md" padding="md">
                <StartupSteps session={data} />
              </Card>
            )}
            <IdleWarning session={data} />
            <SessionActions session={data} afterDelete="/sessions" />
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <Card withBorder radius="md" padding="md">
                <Title order={3} size="h5" mb="xs">
                  Now
                </Title>
                <SessionFacts session={data} />
              </Card>
              <Setup session={data} />
            </SimpleGrid>
            <SizingAdvice image={data.image} tierId={data.tier_id} />
            {/* Charts that fail to draw leave the rest of the page standing. */}
            <ErrorBoundary
              fallback={
                <Text size="sm" c="dimmed" role="status">
                  The charts of this session could not be drawn.
                </Text>
              }
            >
              <Suspense fallback={<Loader size="sm" aria-label="Loading the charts" />}>
                <UsageCharts session={data} />
              </Suspense>
            </ErrorBoundary>
            <Title order={3} size="h4">
              State history
            </Title>
            <History transitions={data.transitions ?? []} />
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
