import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../client';
import { queries, scopes, type BookingFilters } from '../keys';
import type { components } from '../schema';

type Schemas = components['schemas'];

/** A booking as a response gives it: openapi-fetch reads its window pair as a list. */
export type BookingOut = Omit<Schemas['BookingOut'], 'next_window'> & { next_window: string[] | null };
export type BookingIn = Schemas['BookingIn'];
export type BookingEdit = Schemas['BookingEdit'];
export type BookingCheckOut = Schemas['BookingCheckOut'];
export type CalendarOut = Schemas['CalendarOut'];
export type CalendarResource = Schemas['CalendarResource'];
export type CalendarStep = Schemas['CalendarStep'];

export type { BookingFilters } from '../keys';

export function useBookings(filters: BookingFilters = {}, enabled = true) {
  return useQuery({ ...queries.bookings(filters), enabled });
}

/** The calendar of one model; the last week stays shown while the next one loads. */
export function useBookingCalendar(model: string | null, startsAt: string, endsAt: string) {
  return useQuery({
    ...queries.bookingCalendar(model ?? '', startsAt, endsAt),
    enabled: model !== null,
    placeholderData: keepPreviousData,
  });
}

/** Whether `body` would be booked now; the last answer stays shown while the next loads. */
export function useBookingCheck(body: BookingIn | null) {
  return useQuery({
    ...queries.bookingCheck(
      body ?? { group_id: '', tier_id: '', count: 1, starts_at: '', ends_at: '', title: '', notice_minutes: 0 },
    ),
    enabled: body !== null,
    placeholderData: keepPreviousData,
  });
}

/** A booking changes the list, the calendar and what the checks answer. */
function useBookingMutation<T, R>(mutationFn: (input: T) => Promise<R>) {
  const client = useQueryClient();
  return useMutation({ mutationFn, onSuccess: () => client.invalidateQueries({ queryKey: scopes.bookings }) });
}

export function useCreateBooking() {
  return useBookingMutation((body: BookingIn) => unwrap(api.POST('/api/v1/bookings', { body })));
}

export function useEditBooking() {
  return useBookingMutation(({ bookingId, body }: { bookingId: string; body: BookingEdit }) =>
    unwrap(api.PATCH('/api/v1/bookings/{booking_id}', { params: { path: { booking_id: bookingId } }, body })),
  );
}

export function useCancelBooking() {
  return useBookingMutation((bookingId: string) =>
    unwrap(api.POST('/api/v1/bookings/{booking_id}/cancel', { params: { path: { booking_id: bookingId } } })),
  );
}
