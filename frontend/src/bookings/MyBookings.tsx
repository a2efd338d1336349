import { Badge, Button, Group, Table } from '@mantine/core';
import dayjs from 'dayjs';
import { useState } from 'react';
import { useBookings, useCancelBooking, type BookingOut } from '../api/hooks/bookings';
import { useNow } from '../queue/countdown';
import { ConfirmButton } from '../ui/ConfirmButton';
import { QueryState } from '../ui/QueryState';
import { EditBookingModal } from './BookingModal';
import { formatNotice, formatRepeat, formatWhat, formatWindow, runningNow } from './bookingText';

function Status({ booking, now }: { booking: BookingOut; now: number }) {
  if (booking.status === 'cancelled') {
    return (
      <Badge variant="light" color="gray">
        Cancelled
      </Badge>
    );
  }
  if (runningNow(booking, now)) {
    return (
      <Badge variant="light" color="green">
        Running now
      </Badge>
    );
  }
  return (
    <Badge variant="light" color="blue">
      {booking.next_window ? 'Booked' : 'Ended'}
    </Badge>
  );
}

function Actions({ booking, now }: { booking: BookingOut; now: number }) {
  const cancel = useCancelBooking();
  const [editing, setEditing] = useState(false);
  if (!booking.can_manage || booking.status !== 'active') return null;
  // A booking changes only before it starts; after, it is cancelled and booked anew.
  const editable = dayjs(booking.starts_at).valueOf() > now;
  return (
    <Group gap="xs" wrap="nowrap">
      {editable && (
        <>
          <Button size="xs" variant="light" aria-label={`Edit ${booking.title}`} onClick={() => setEditing(true)}>
            Edit
          </Button>
          <EditBookingModal booking={booking} opened={editing} onClose={() => setEditing(false)} />
        </>
      )}
      <ConfirmButton
        label="Cancel"
        aria-label={`Cancel ${booking.title}`}
        title="Cancel booking"
        message={`Cancel ${booking.title}? Its capacity is free at once for other bookings and for the queue; sessions running on it go on. The group's members are told.`}
        confirmLabel="Cancel booking"
        onConfirm={() => cancel.mutateAsync(booking.id)}
      />
    </Group>
  );
}

function BookingRow({ booking, now }: { booking: BookingOut; now: number }) {
  const window = booking.next_window;
  return (
    <Table.Tr>
      <Table.Th scope="row" fw={500}>
        {booking.title}
      </Table.Th>
      <Table.Td>{booking.group_name}</Table.Td>
      <Table.Td>{formatWhat(booking)}</Table.Td>
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{window ? formatWindow(window[0], window[1]) : '—'}</Table.Td>
      <Table.Td>{formatRepeat(booking)}</Table.Td>
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatNotice(booking.notice_minutes)}</Table.Td>
      <Table.Td>
        <Status booking={booking} now={now} />
      </Table.Td>
      <Table.Td>
        <Actions booking={booking} now={now} />
      </Table.Td>
    </Table.Tr>
  );
}

/** The bookings of the caller's groups, soonest first, with Edit and Cancel where the caller manages them. */
export function MyBookings() {
  const bookings = useBookings();
  // The clock read each half minute, and no earlier than the answer shown: a booking made to
  // start now shows as started (and no longer editable) as soon as it is listed.
  const now = Math.max(useNow(true, 30_000), bookings.dataUpdatedAt);
  const items = bookings.data?.items ?? [];
  return (
    <QueryState query={bookings} isEmpty={items.length === 0} empty="Your groups have no bookings to come.">
      <Table.ScrollContainer minWidth={980}>
        <Table striped verticalSpacing="xs" aria-label="My bookings">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Title</Table.Th>
              <Table.Th scope="col">Group</Table.Th>
              <Table.Th scope="col">Booked</Table.Th>
              <Table.Th scope="col">Next window</Table.Th>
              <Table.Th scope="col">Repeats</Table.Th>
              <Table.Th scope="col">Notice</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {items.map((booking) => (
              <BookingRow key={booking.id} booking={booking} now={now} />
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </QueryState>
  );
}
