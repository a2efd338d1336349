import { Alert, Stack, Text } from '@mantine/core';
import { IconCalendarCheck } from '@tabler/icons-react';
import { useBookings } from '../api/hooks/bookings';
import { runningNow } from '../bookings/bookingText';
import { formatClock, useNow } from '../queue/countdown';
import { countOf } from '../ui/format';

/**
 * The group's bookings of the chosen tier running now: "Tuesday class: 30 slots booked for your
 * group until 12:00". A session within one goes ahead of the queue. (How many of the slots the
 * group uses now is not in any answer a member may read, so it is not said.)
 */
export function BookedForGroup({ groupId, tierId }: { groupId: string | null; tierId: string | null }) {
  const asked = Boolean(groupId && tierId);
  const bookings = useBookings({ group_id: groupId ?? undefined }, asked);
  const now = useNow(asked, 30_000);
  if (!asked) return null;
  const running = (bookings.data?.items ?? []).filter((booking) => booking.tier_id === tierId && runningNow(booking, now));
  if (running.length === 0) return null;
  return (
    <Alert color="blue" variant="light" role="status" icon={<IconCalendarCheck size={20} aria-hidden />} py="xs">
      <Stack gap={2}>
        {running.map((booking) => {
          const until = booking.next_window?.[1] ?? booking.ends_at;
          return (
            <Text size="sm" key={booking.id}>
              {booking.title}: {countOf(booking.count, 'slot')} booked for your group until{' '}
              <time dateTime={until}>{formatClock(until, now)}</time>
            </Text>
          );
        })}
      </Stack>
    </Alert>
  );
}
