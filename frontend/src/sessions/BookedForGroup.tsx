import { Alert, Stack, Text } from '@mantine/core';
import { IconCalendarCheck } from '@tabler/icons-react';
import { useBookings } from '../api/hooks/bookings';
import { runningNow } from '../bookings/bookingText';
import { formatClock, useNow } from '../queue/countdown';
import { countOf } from '../ui/format';

/**
 * The group's bookings of the chosen tier running now: "Tuesday class: 12 of 30 booked slots
 * free until 12:00" (or "30 slots booked for your group until 12:00" when the answer does not say
 * how many the group uses). A session within one goes ahead of the queue.
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
          const inUse = booking.in_use;
          const what =
            inUse === null || inUse === undefined
              ? `${countOf(booking.count, 'slot')} booked for your group`
              : `${Math.max(booking.count - inUse, 0)} of ${booking.count} booked slots free`;
          return (
            <Text size="sm" key={booking.id}>
              {booking.title}: {what} until <time dateTime={until}>{formatClock(until, now)}</time>
            </Text>
          );
        })}
      </Stack>
    </Alert>
  );
}
