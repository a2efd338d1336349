import { Alert, Anchor, Card, Group, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import type { SessionOut } from '../api/hooks/sessions';
import { formatWait } from '../queue/QueueTable';
import { formatCredits } from '../ui/amount';
import { formatDateTime, formatRelative } from '../ui/format';
import { KeepRunningButton, SessionActions } from './SessionActions';
import { SessionNotice } from './SessionNotice';
import { showsStartup, StartupSteps } from './StartupSteps';
import { gpuSlice, peakVram, SESSION_TYPE_LABELS, StateWithReason, utilization, WAITING_STATES } from './sessionParts';

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Group gap="xs" wrap="nowrap" align="baseline">
      <Text size="xs" c="dimmed" w={96} style={{ flexShrink: 0 }}>
        {label}
      </Text>
      <Text size="sm" component="div">
        {children}
      </Text>
    </Group>
  );
}

/** The owner was warned that the session will be paused for being idle. */
export function IdleWarning({ session }: { session: SessionOut }) {
  if (!session.idle_pause_at) return null;
  return (
    <Alert color="yellow" title="Idle: it will be paused" role="status">
      <Stack gap="xs">
        <Text size="sm">
          No GPU use since {formatDateTime(session.idle_since)}. It will be paused at{' '}
          <b>{formatDateTime(session.idle_pause_at)}</b> ({formatRelative(session.idle_pause_at)}) unless it is kept
          running.
        </Text>
        {session.can_keep_running && <KeepRunningButton session={session} />}
      </Stack>
    </Alert>
  );
}

/** What a session is, where it stands and what it costs; its name links to its page. */
export function SessionFacts({ session }: { session: SessionOut }) {
  const peak = peakVram(session);
  const usage = utilization(session);
  const waiting = WAITING_STATES.includes(session.state) && session.queue_position != null;
  return (
    <Stack gap={4}>
      <Fact label="GPU">
        {gpuSlice(session)}
        {peak && (
          <Text span size="sm" c="dimmed">
            {' '}
            ({peak})
          </Text>
        )}
      </Fact>
      {usage && <Fact label="Utilization">{usage}</Fact>}
      <Fact label="Price">{formatCredits(session.price_per_hour)} per hour{session.billing ? '' : ' (not billing now)'}</Fact>
      <Fact label="Cost so far">{formatCredits(session.cost)}</Fact>
      {waiting && (
        <Fact label="In queue">
          position {session.queue_position}, estimated wait {formatWait(session.estimated_wait_seconds ?? null)}
        </Fact>
      )}
      {waiting && session.ahead && <Fact label="Why">{session.ahead.in_words}</Fact>}
    </Stack>
  );
}

export function SessionCard({ session }: { session: SessionOut }) {
  return (
    <Card withBorder radius="md" padding="md" component="article" aria-label={session.name}>
      <Stack gap="sm">
        <div>
          <Group justify="space-between" align="flex-start" wrap="nowrap">
            <Anchor component={Link} to={`/sessions/${session.id}`} fw={600} miw={0} title={session.name} truncate="end">
              {session.name}
            </Anchor>
            <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
              {SESSION_TYPE_LABELS[session.session_type]}
            </Text>
          </Group>
          <Text size="xs" c="dimmed" truncate="end" title={session.image}>
            {session.image}
          </Text>
        </div>
        <StateWithReason session={session} />
        <SessionNotice session={session} />
        {showsStartup(session) && <StartupSteps session={session} compact />}
        <IdleWarning session={session} />
        <SessionFacts session={session} />
        <SessionActions session={session} />
      </Stack>
    </Card>
  );
}
