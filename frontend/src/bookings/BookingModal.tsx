import { Alert, Checkbox, Group, NumberInput, Select, Text, TextInput } from '@mantine/core';
import { DatePickerInput, TimeInput } from '@mantine/dates';
import { useForm, type UseFormReturnType } from '@mantine/form';
import { useDebouncedValue } from '@mantine/hooks';
import { IconCalendarPlus, IconCircleCheck, IconDeviceFloppy, IconAlertTriangle } from '@tabler/icons-react';
import dayjs from 'dayjs';
import { useEffect, useMemo } from 'react';
import { useTiers } from '../api/hooks/capacity';
import {
  useBookingCheck,
  useCreateBooking,
  useEditBooking,
  type BookingIn,
  type BookingOut,
} from '../api/hooks/bookings';
import { errorMessage } from '../api/errors';
import type { UsableTierOut } from '../api/types';
import { useActionableGroups } from '../admin/actionableGroups';
import { useNow } from '../queue/countdown';
import { FormModal } from '../ui/FormModal';
import { formatMemoryGiB } from '../ui/format';
import {
  BOOKING_FIELDS,
  bookingEdit,
  bookingRequest,
  bookingValues,
  checkRequest,
  endsNextDay,
  LIMITS,
  newBooking,
  validateBooking,
  type BookingValues,
} from './bookingForm';
import { formatWhat } from './bookingText';

// Typing should not ask the server at every keystroke.
const CHECK_DELAY_MS = 400;

function tierLabel(tier: UsableTierOut): string {
  return `${tier.name} · ${formatMemoryGiB(tier.vram_mib)}`;
}

/** What the server's check says of the booking as it stands: it fits, or why not and from when. */
function CheckResult({ asked, check }: { asked: boolean; check: ReturnType<typeof useBookingCheck> }) {
  if (!asked) {
    return (
      <Text size="sm" c="dimmed">
        Choose the group, what and when: whether it fits is checked as you go.
      </Text>
    );
  }
  if (check.error) {
    return (
      <Alert color="red" role="status" icon={<IconAlertTriangle size={20} aria-hidden />} py="xs">
        <Text size="sm">Could not check: {errorMessage(check.error)}</Text>
      </Alert>
    );
  }
  if (!check.data) {
    return (
      <Text size="sm" c="dimmed" role="status">
        Checking…
      </Text>
    );
  }
  const { fits, message, at } = check.data;
  return fits ? (
    <Alert color="green" role="status" icon={<IconCircleCheck size={20} aria-hidden />} py="xs">
      <Text size="sm">{message}</Text>
    </Alert>
  ) : (
    <Alert color="orange" role="status" icon={<IconAlertTriangle size={20} aria-hidden />} title="It does not fit" py="xs">
      <Text size="sm">{message}</Text>
      {at && (
        <Text size="sm" mt={4}>
          First moment short: <time dateTime={at}>{dayjs(at).format('ddd D MMM YYYY HH:mm')}</time>
        </Text>
      )}
    </Alert>
  );
}

/** A day picker's value, change and error for a `YYYY-MM-DD` field ('' when none is chosen). */
function dayProps(form: UseFormReturnType<BookingValues>, field: 'date' | 'endDate' | 'weeklyUntil') {
  return {
    value: form.values[field] || null,
    onChange: (value: string | null) => form.setFieldValue(field, value ?? ''),
    error: form.errors[field],
  };
}

/** The fields of a window, shared by a new booking and a change to one. */
function WhenFields({ form, now }: { form: UseFormReturnType<BookingValues>; now: number }) {
  const { startNow } = form.values;
  const today = dayjs(now).format('YYYY-MM-DD');
  return (
    <>
      <Checkbox label="Start now" {...form.getInputProps('startNow', { type: 'checkbox' })} />
      {!startNow && (
        <DatePickerInput
          label="Day"
          {...dayProps(form, 'date')}
          minDate={today}
          valueFormat="ddd D MMM YYYY"
        />
      )}
      <Group grow align="flex-start">
        {!startNow && <TimeInput label="From" {...form.getInputProps('from')} />}
        <TimeInput
          label="To"
          description={endsNextDay(form.values, now) ? 'The next day' : undefined}
          {...form.getInputProps('to')}
        />
      </Group>
      <DatePickerInput
        label="Ends on"
        description="Optional: for a window of several days (at most 14)"
        placeholder="The same day"
        {...dayProps(form, 'endDate')}
        minDate={startNow ? today : form.values.date || today}
        valueFormat="ddd D MMM YYYY"
        clearable
      />
      <DatePickerInput
        label="Repeat weekly until"
        description="Optional: the window repeats every week up to this day"
        placeholder="Once"
        {...dayProps(form, 'weeklyUntil')}
        minDate={today}
        valueFormat="D MMM YYYY"
        clearable
      />
    </>
  );
}

function AboutFields({ form }: { form: UseFormReturnType<BookingValues> }) {
  return (
    <>
      <TextInput
        label="Title"
        description="What the booking is for, as your group's members read it"
        {...form.getInputProps('title')}
      />
      <NumberInput
        label="Notice (minutes)"
        description="How long a session lent this capacity is told before it is paused for a member: 0 to 1,440"
        {...form.getInputProps('notice')}
        min={LIMITS.notice.min}
        max={LIMITS.notice.max}
        clampBehavior="none"
        allowDecimal={false}
      />
    </>
  );
}

function CountField({ form }: { form: UseFormReturnType<BookingValues> }) {
  return (
    <NumberInput
      label="Sessions"
      description="How many sessions of the tier the group may run at once: 1 to 10,000"
      {...form.getInputProps('count')}
      min={LIMITS.count.min}
      max={LIMITS.count.max}
      clampBehavior="none"
      allowDecimal={false}
    />
  );
}

interface NewBookingModalProps {
  opened: boolean;
  onClose: () => void;
  /** The model the calendar shows: chosen at first. */
  model: string | null;
}

/** Books capacity for a group the caller administers; checks with the server as the fields change. */
export function NewBookingModal({ opened, onClose, model }: NewBookingModalProps) {
  const create = useCreateBooking();
  const groups = useActionableGroups('booking.manage', { enabled: opened });
  const tiers = useTiers(null);
  const form = useForm<BookingValues>({ initialValues: newBooking(Date.now()), validate: validateBooking });
  const now = useNow(opened, 30_000);
  const tierItems = useMemo(() => tiers.data?.items ?? [], [tiers.data]);
  const models = useMemo(() => [...new Set(tierItems.map((tier) => tier.model))].sort(), [tierItems]);
  const modelTiers = tierItems.filter((tier) => tier.model === form.values.model);
  const onlyGroup = groups.groups.length === 1 ? groups.groups[0].id : null;

  // With one group to book for it is chosen; the model shown in the calendar is chosen first.
  const { setFieldValue } = form;
  const chosenGroup = form.values.group;
  useEffect(() => {
    if (opened && onlyGroup && !chosenGroup) setFieldValue('group', onlyGroup);
  }, [opened, onlyGroup, chosenGroup, setFieldValue]);
  const chosenModel = form.values.model;
  const firstModel = model && models.includes(model) ? model : (models[0] ?? null);
  useEffect(() => {
    if (opened && !chosenModel && firstModel) setFieldValue('model', firstModel);
  }, [opened, chosenModel, firstModel, setFieldValue]);

  const values = form.values;
  const asked = useMemo<BookingIn | null>(() => (opened ? checkRequest(values, now) : null), [opened, values, now]);
  const [debounced] = useDebouncedValue(asked, CHECK_DELAY_MS);
  const check = useBookingCheck(asked === null ? null : debounced);

  const tierName = (id: string | null) => tierItems.find((tier) => tier.id === id)?.name ?? 'capacity';
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="Book capacity"
      submitLabel="Book"
      submitIcon={<IconCalendarPlus size={16} aria-hidden />}
      form={form}
      initialValues={newBooking(Date.now(), { model: firstModel, group: onlyGroup })}
      serverFields={BOOKING_FIELDS}
      onSubmit={(submitted) => create.mutateAsync(bookingRequest(submitted, Date.now()))}
      done={(submitted) =>
        `Booked ${submitted.count} × ${tierName(submitted.tier)} for ${groups.names.get(submitted.group ?? '') ?? 'the group'}: ${submitted.title.trim()}.`
      }
    >
      <Select
        label="Group"
        description="Only groups you may book for"
        placeholder={groups.isPending ? 'Loading…' : 'Choose a group'}
        data={groups.options}
        searchable
        {...form.getInputProps('group')}
        data-autofocus
      />
      <Select
        label="GPU model"
        data={models}
        value={form.values.model}
        onChange={(value) => form.setValues({ model: value, tier: null })}
        error={form.errors.model}
        allowDeselect={false}
      />
      <Select
        label="Tier"
        placeholder={form.values.model ? 'Choose a tier' : 'Choose a model first'}
        data={modelTiers.map((tier) => ({ value: tier.id, label: tierLabel(tier) }))}
        {...form.getInputProps('tier')}
        allowDeselect={false}
      />
      <CountField form={form} />
      <WhenFields form={form} now={now} />
      <AboutFields form={form} />
      <CheckResult asked={asked !== null} check={check} />
    </FormModal>
  );
}

interface EditBookingModalProps {
  booking: BookingOut;
  opened: boolean;
  onClose: () => void;
}

/** Changes a booking before it starts; the server checks it again as a whole when it is saved. */
export function EditBookingModal({ booking, opened, onClose }: EditBookingModalProps) {
  const edit = useEditBooking();
  const form = useForm<BookingValues>({ initialValues: bookingValues(booking), validate: validateBooking });
  const now = useNow(opened, 30_000);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`Edit ${booking.title}`}
      submitLabel="Save booking"
      submitIcon={<IconDeviceFloppy size={16} aria-hidden />}
      form={form}
      initialValues={bookingValues(booking)}
      serverFields={BOOKING_FIELDS}
      onSubmit={(values) => edit.mutateAsync({ bookingId: booking.id, body: bookingEdit(values, Date.now()) })}
      done={(values) => `Saved ${values.title.trim()}.`}
    >
      <Text size="sm">
        {formatWhat(booking)} for {booking.group_name}. Saving checks it again beside every other booking.
      </Text>
      <CountField form={form} />
      <WhenFields form={form} now={now} />
      <AboutFields form={form} />
    </FormModal>
  );
}
