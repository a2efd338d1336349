import { Button, Group, Paper, Select, Stack, Text, Title } from '@mantine/core';
import { IconCalendarPlus, IconChevronLeft, IconChevronRight } from '@tabler/icons-react';
import { useMemo, useState, type ReactNode } from 'react';
import { useTiers } from '../api/hooks/capacity';
import { useSession } from '../auth/session';
import { PageHeader } from '../ui/PageHeader';
import { QueryState } from '../ui/QueryState';
import { BookingCalendar } from './BookingCalendar';
import { NewBookingModal } from './BookingModal';
import { weekOf } from './bookingText';
import { MyBookings } from './MyBookings';

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Paper withBorder p="md" radius="md" component="section" aria-label={title}>
      <Title order={3} size="h4" mb="sm">
        {title}
      </Title>
      {children}
    </Paper>
  );
}

/**
 * Capacity booked ahead for classes and deadlines: a week's calendar of booked and free capacity
 * per GPU model (anyone signed in reads it; it names no one), the bookings of the caller's
 * groups, and booking for those who administer a group.
 */
export function BookingsPage() {
  const { canSomewhere } = useSession();
  const canBook = canSomewhere('booking.manage');
  const tiers = useTiers(null);
  const models = useMemo(() => [...new Set((tiers.data?.items ?? []).map((tier) => tier.model))].sort(), [tiers.data]);
  const [picked, setPicked] = useState<string | null>(null);
  const model = picked && models.includes(picked) ? picked : (models[0] ?? null);
  const [weekStart, setWeekStart] = useState(() => weekOf(Date.now()));
  const [booking, setBooking] = useState(false);

  return (
    <Stack maw={1400} gap="lg">
      <PageHeader
        title="Bookings"
        description="GPU capacity booked ahead for classes and deadlines. Booked capacity nobody uses is lent to everyone until the group's members need it."
        actions={
          canBook && (
            <Button leftSection={<IconCalendarPlus size={16} aria-hidden />} onClick={() => setBooking(true)}>
              Book capacity
            </Button>
          )
        }
      />
      <Section title="Calendar">
        <QueryState query={tiers} isEmpty={models.length === 0} empty="No GPU model is offered to you.">
          <Group justify="space-between" align="flex-end" mb="md">
            <Select
              label="GPU model"
              data={models}
              value={model}
              onChange={setPicked}
              allowDeselect={false}
              w={280}
            />
            <Group gap="xs">
              <Button
                variant="default"
                leftSection={<IconChevronLeft size={16} aria-hidden />}
                onClick={() => setWeekStart((week) => week.subtract(7, 'day'))}
              >
                Previous week
              </Button>
              <Button variant="default" onClick={() => setWeekStart(weekOf(Date.now()))}>
                This week
              </Button>
              <Button
                variant="default"
                rightSection={<IconChevronRight size={16} aria-hidden />}
                onClick={() => setWeekStart((week) => week.add(7, 'day'))}
              >
                Next week
              </Button>
            </Group>
          </Group>
          {model && <BookingCalendar model={model} weekStart={weekStart} />}
          <Text size="xs" c="dimmed" mt="xs">
            Times are in your browser&apos;s time zone. Cards hold the fraction and exclusive tiers; a MIG profile&apos;s
            instances are booked apart.
          </Text>
        </QueryState>
      </Section>
      <Section title="My bookings">
        <MyBookings />
      </Section>
      {canBook && <NewBookingModal opened={booking} onClose={() => setBooking(false)} model={model} />}
    </Stack>
  );
}
