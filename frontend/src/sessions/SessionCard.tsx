import { Alert, Anchor, Card, Group, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { useMe } from '../api/hooks/me';
import { queries } from '../api/keys';
import type { UsableTierOut } from '../api/types';
import type { SessionOut } from '../api/hooks/sessions';
import { formatWait, HeldForBooking, StartEstimate } from '../queue/QueueTable';
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

/** The tiers of the session's group that could start now instead, cheapest first (at most three). */
export function startsSooner(tiers: readonly UsableTierOut[], session: Pick<SessionOut, 'tier_id'>): UsableTierOut[] {
  return tiers
    .filter((t) => t.free_slots > 0 && t.id !== session.tier_id)
    .sort((a, b) => Number(a.price_per_hour) - Number(b.price_per_hour) || a.name.localeCompare(b.name))
    .slice(0, 3);
}

/** For the owner of a waiting session: what would start now, with its price. */
function StartsSooner({ session }: { session: SessionOut }) {
  const me = useMe();
  const mine = me.data?.user.id === session.owner_id;
  const tiers = useQuery({ ...queries.tiers(session.group_id), enabled: mine });
  if (!mine || !tiers.data) return null;
  const found = startsSooner(tiers.data.items, session);
  if (found.length === 0) return null;
  return (
    <Fact label="Starts now">
      {found.map((t) => `${t.model} ${t.name} (${formatCredits(t.price_per_hour)}/h)`).join(', ')}:{' '}
      <Anchor component={Link} to="/sessions/new" size="sm">
        start one instead
      </Anchor>
    </Fact>
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
          position {session.queue_position}
          {session.start ? '' : `, estimated wait ${formatWait(session.estimated_wait_seconds ?? null)}`}
        </Fact>
      )}
      {waiting && session.start && (
        <Fact label="Starts">
          <StartEstimate start={session.start} waitSeconds={session.estimated_wait_seconds ?? null} />
        </Fact>
      )}
      {waiting && session.waits_for && <Fact label="Waits for">{session.waits_for}</Fact>}
      {waiting && session.ahead && <Fact label="Why">{session.ahead.in_words}</Fact>}
      {waiting && session.held_for_booking && (
        <Fact label="Held">
          <HeldForBooking held={session.held_for_booking} />
        </Fact>
      )}
      {waiting && <StartsSooner session={session} />}
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
