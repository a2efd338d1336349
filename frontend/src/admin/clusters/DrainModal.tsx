import { SegmentedControl, Select, Stack, Text, Textarea } from '@mantine/core';
import { DateTimePicker } from '@mantine/dates';
import { useForm } from '@mantine/form';
import dayjs from 'dayjs';
import { useId, useMemo } from 'react';
import type { CardOut } from '../../api/types';
import { formatClock } from '../../queue/countdown';
import { FormModal } from '../../ui/FormModal';
import {
  DRAIN_FIELDS,
  drainRequest,
  MAX_AHEAD_DAYS,
  newDrain,
  onDrainField,
  PICKER_FORMAT,
  SCOPE_LABELS,
  validateDrain,
  type DrainValues,
} from './drainForm';
import { useStartDrain, type DrainScope } from './drains';
import { naturalCompare } from './inventorySummary';

const SCOPES = (Object.keys(SCOPE_LABELS) as DrainScope[]).map((value) => ({ value, label: SCOPE_LABELS[value] }));

/** The cards by node, for a picker: each card by its UUID and model. */
function cardOptions(cards: readonly CardOut[]) {
  const byNode = new Map<string, { value: string; label: string }[]>();
  for (const card of [...cards].sort((a, b) => naturalCompare(a.node, b.node) || naturalCompare(a.uuid, b.uuid))) {
    byNode.set(card.node, [...(byNode.get(card.node) ?? []), { value: card.id, label: `${card.uuid} · ${card.model}` }]);
  }
  return [...byNode.entries()].map(([group, items]) => ({ group, items }));
}

interface DrainModalProps {
  clusterId: string;
  clusterName: string;
  cards: readonly CardOut[];
  opened: boolean;
  onClose: () => void;
}

/** Takes the whole cluster, one node or one card out of service, its sessions paused at a deadline. */
export function DrainModal({ clusterId, clusterName, cards, opened, onClose }: DrainModalProps) {
  const start = useStartDrain();
  const form = useForm<DrainValues>({ initialValues: newDrain(Date.now()), validate: validateDrain });
  const nodes = useMemo(() => [...new Set(cards.map((card) => card.node))].sort(naturalCompare), [cards]);
  const cardChoices = useMemo(() => cardOptions(cards), [cards]);
  const uuids = useMemo(() => new Map(cards.map((card) => [card.id, card.uuid])), [cards]);
  const { scope } = form.values;
  const scopeLabel = useId();
  const now = dayjs();

  const what = (values: DrainValues) => {
    if (values.scope === 'node') return `node ${values.node}`;
    if (values.scope === 'card') return `card ${uuids.get(values.cardId ?? '') ?? values.cardId}`;
    return clusterName;
  };

  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="Drain"
      submitLabel="Start draining"
      form={form}
      initialValues={newDrain(Date.now())}
      serverFields={DRAIN_FIELDS}
      onSubmit={async (values) => {
        try {
          return await start.mutateAsync(drainRequest(values, clusterId));
        } catch (error) {
          throw onDrainField(error);
        }
      }}
      done={(values) => `Draining ${what(values)}: its sessions are paused at ${formatClock(dayjs(values.deadline).toISOString())}.`}
    >
      <Text size="sm">
        What is drained takes no new session from now on. The sessions on it are told, and paused at the deadline to
        resume elsewhere; their volumes are kept.
      </Text>
      <Stack gap={4}>
        <Text size="sm" fw={500} component="span" id={scopeLabel}>
          What to drain
        </Text>
        <SegmentedControl
          aria-labelledby={scopeLabel}
          data={SCOPES}
          value={scope}
          onChange={(value) => form.setFieldValue('scope', value as DrainScope)}
        />
      </Stack>
      {scope === 'node' && (
        <Select label="Node" placeholder="Choose a node" data={nodes} searchable {...form.getInputProps('node')} />
      )}
      {scope === 'card' && (
        <Select
          label="Card"
          placeholder="Choose a card"
          data={cardChoices}
          searchable
          {...form.getInputProps('cardId')}
        />
      )}
      <DateTimePicker
        label="Deadline"
        description={`When the sessions still on it are paused; at most ${MAX_AHEAD_DAYS} days ahead.`}
        value={form.values.deadline || null}
        onChange={(value) => form.setFieldValue('deadline', value ?? '')}
        error={form.errors.deadline}
        valueFormat="D MMM YYYY HH:mm"
        minDate={now.startOf('minute').format(PICKER_FORMAT)}
        maxDate={now.add(MAX_AHEAD_DAYS, 'day').format(PICKER_FORMAT)}
        withSeconds={false}
      />
      <Textarea
        label="Reason"
        description="The sessions' owners read it in their notice."
        rows={3}
        {...form.getInputProps('reason')}
      />
    </FormModal>
  );
}
