import { Alert, Stack, Text } from '@mantine/core';
import { IconClockPause, IconCpu } from '@tabler/icons-react';
import type { SessionOut } from '../api/hooks/sessions';
import { Countdown } from '../queue/Countdown';
import { formatClock, useNow } from '../queue/countdown';
import { formatDateTime } from '../ui/format';
import { WAITING_STATES } from './sessionParts';

/**
 * The session was told it will be paused (its card is freed for another request, or its
 * capacity is drained): when, why, and that it comes back by itself. An alert, read once when
 * it appears; the countdown inside it ticks without being announced.
 */
export function NoticeBanner({ session }: { session: Pick<SessionOut, 'notice'> }) {
  const notice = session.notice;
  if (!notice) return null;
  const hardware = notice.reason === 'xid';
  return (
    <Alert
      color={hardware ? 'red' : 'orange'}
      role="alert"
      icon={<IconClockPause size={20} aria-hidden />}
      title={
        <>
          This session will be paused <Countdown deadline={notice.deadline} />
        </>
      }
    >
      <Stack gap={4}>
        {notice.message && <Text size="sm">{notice.message}</Text>}
        <Text size="sm">Save your work; it resumes by itself when a card is free. Its volumes are kept.</Text>
      </Stack>
    </Alert>
  );
}

/** A waiting session for which a card is being freed: by when it should start. */
export function CardFreedLine({ session }: { session: Pick<SessionOut, 'card_freed_at' | 'state'> }) {
  const at = session.card_freed_at;
  // The clock time is said as "10:42" on the day, with the date on another; once a minute is enough.
  const now = useNow(Boolean(at), 60_000);
  if (!at || !WAITING_STATES.includes(session.state)) return null;
  return (
    <Alert color="blue" role="status" icon={<IconCpu size={20} aria-hidden />} py="xs">
      <Text size="sm">
        A card is being freed for you at{' '}
        <time dateTime={at} title={formatDateTime(at)}>
          {formatClock(at, now)}
        </time>
      </Text>
    </Alert>
  );
}

/** Both, where a session is shown: at most one applies at a time. */
export function SessionNotice({ session }: { session: SessionOut }) {
  return (
    <>
      <NoticeBanner session={session} />
      <CardFreedLine session={session} />
    </>
  );
}
