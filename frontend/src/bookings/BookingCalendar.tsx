import { Badge, Box, Stack, Table, Text } from '@mantine/core';
import dayjs from 'dayjs';
import { useMemo } from 'react';
import { useBookingCalendar, type CalendarResource } from '../api/hooks/bookings';
import { QueryState } from '../ui/QueryState';
import { dayParts, resourceCapacity, resourceName, type DayPart } from './bookingText';

const DAYS = 7;

/** A stretch of one day: its times and, in words, what is booked and free (its colour only repeats it). */
function Part({ part }: { part: DayPart }) {
  const short = part.free <= 0;
  const color = short ? 'red' : part.booked > 0 ? 'orange' : 'gray';
  const free = part.free < 0 ? `${(-part.free).toLocaleString()} over capacity` : `${part.free.toLocaleString()} free`;
  const figures = part.booked > 0 ? `${part.booked.toLocaleString()} booked, ${free}` : free;
  return (
    <Box
      pl={6}
      style={{ borderLeft: `3px solid var(--mantine-color-${color}-${part.booked > 0 || short ? 6 : 3})` }}
      data-booked={part.booked > 0 || undefined}
    >
      <Text size="xs" c="dimmed" style={{ fontVariantNumeric: 'tabular-nums', whiteSpace: 'nowrap' }}>
        {part.wholeDay ? 'All day' : `${part.from}–${part.to}`}
      </Text>
      <Text size="sm" fw={part.booked > 0 ? 600 : undefined} c={short ? 'red' : undefined}>
        {figures}
      </Text>
    </Box>
  );
}

function ResourceRow({ resource, days }: { resource: CalendarResource; days: dayjs.Dayjs[] }) {
  const name = resourceName(resource);
  return (
    <Table.Tr>
      <Table.Th scope="row" style={{ verticalAlign: 'top' }}>
        <Text size="sm" fw={600}>
          {name}
        </Text>
        <Text size="xs" c="dimmed" fw={400}>
          {resourceCapacity(resource)}
        </Text>
      </Table.Th>
      {days.map((day) => (
        <Table.Td key={day.valueOf()} style={{ verticalAlign: 'top' }}>
          <Stack gap={6}>
            {dayParts(resource.steps, day).map((part) => (
              <Part key={`${part.from}-${part.to}`} part={part} />
            ))}
          </Stack>
        </Table.Td>
      ))}
    </Table.Tr>
  );
}

interface BookingCalendarProps {
  model: string;
  /** The week shown: its first day at 00:00, local time. */
  weekStart: dayjs.Dayjs;
  now?: number;
}

/**
 * A week of one GPU model: for its cards and for each MIG profile's instances, a row of days with
 * what is booked and free, step by step. It names no group: anyone signed in may read it.
 */
export function BookingCalendar({ model, weekStart, now = Date.now() }: BookingCalendarProps) {
  const days = useMemo(() => Array.from({ length: DAYS }, (_, i) => weekStart.add(i, 'day')), [weekStart]);
  const end = weekStart.add(DAYS, 'day');
  const calendar = useBookingCalendar(model, weekStart.toISOString(), end.toISOString());
  const resources = calendar.data?.resources ?? [];
  const today = dayjs(now).startOf('day');
  const caption = `Booked and free capacity of ${model}, ${weekStart.format('D MMM')} to ${end.subtract(1, 'day').format('D MMM YYYY')}`;
  return (
    <QueryState query={calendar} isEmpty={resources.length === 0} empty={`No capacity of ${model} is known.`}>
      <Table.ScrollContainer minWidth={900}>
        <Table withTableBorder withColumnBorders layout="fixed" captionSide="top" aria-busy={calendar.isFetching}>
          <Table.Caption>{caption}</Table.Caption>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col" w={130}>
                Resource
              </Table.Th>
              {days.map((day) => (
                <Table.Th scope="col" key={day.valueOf()}>
                  {day.format('ddd D MMM')}
                  {day.isSame(today) && (
                    <Badge size="xs" variant="light" ml={6}>
                      Today
                    </Badge>
                  )}
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {resources.map((resource) => (
              <ResourceRow key={`${resource.pool}-${resource.profile ?? ''}`} resource={resource} days={days} />
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </QueryState>
  );
}
