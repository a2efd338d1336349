import { Alert, Badge, Button, Group, NumberInput, Paper, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconDeviceFloppy, IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import {
  useCreateGpuModel,
  useCreateTier,
  useGpuModels,
  useRetireTier,
  useSetExclusivePrice,
  useSetTierPrice,
} from '../../api/hooks/capacity';
import type { GpuModelOut, TierKind, TierOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { formatCredits } from '../../ui/amount';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate, formatMemoryGiB } from '../../ui/format';
import { notifyDone } from '../../ui/notify';
import { QueryState } from '../../ui/QueryState';
import { PageHeader } from '../../ui/PageHeader';
import { FormModal } from '../../ui/FormModal';
import {
  LIMITS,
  MODEL_FIELDS,
  modelRequest,
  PRICE_FIELDS,
  priceSchema,
  TIER_FIELDS,
  tierRequest,
  validateNewModel,
  validateNewTier,
  validatePrice,
  type NewModelValues,
  type NewTierValues,
  type PriceValues,
} from './tiersForm';

const KIND_LABELS: Record<TierKind, string> = { fraction: 'Fraction', exclusive: 'Exclusive', mig: 'MIG' };

const NEW_MODEL: NewModelValues = { name: '', price: '', memory: '', split: '' };

function NewModelModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const create = useCreateGpuModel();
  const form = useForm<NewModelValues>({ initialValues: NEW_MODEL, validate: validateNewModel, validateInputOnBlur: true });
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="Add GPU model"
      submitLabel="Add model"
      submitIcon={<IconPlus size={16} aria-hidden />}
      form={form}
      initialValues={NEW_MODEL}
      serverFields={MODEL_FIELDS}
      onSubmit={(values) => create.mutateAsync(modelRequest(values))}
      done={(values) => `Added ${values.name.trim()}.`}
    >
      <TextInput label="Name" description="As the cluster reports it" {...form.getInputProps('name')} data-autofocus />
      <TextInput
        label="Exclusive price"
        description="Credits per hour for the whole card, a decimal such as 2.5"
        {...form.getInputProps('price')}
      />
      <NumberInput
        label="Memory (MiB)"
        description={`Optional; ${LIMITS.memoryMib.min} to ${LIMITS.memoryMib.max.toLocaleString('en')}`}
        {...form.getInputProps('memory')}
        min={LIMITS.memoryMib.min}
        max={LIMITS.memoryMib.max}
        clampBehavior="none"
        allowDecimal={false}
      />
      <NumberInput
        label="Split count"
        description={`Optional; ${LIMITS.splitCount.min} to ${LIMITS.splitCount.max.toLocaleString('en')}`}
        {...form.getInputProps('split')}
        min={LIMITS.splitCount.min}
        max={LIMITS.splitCount.max}
        clampBehavior="none"
        allowDecimal={false}
      />
    </FormModal>
  );
}

function PriceModal({
  opened,
  onClose,
  title,
  initial,
  onSave,
  onReset,
}: {
  opened: boolean;
  onClose: () => void;
  title: string;
  initial: string;
  onSave: (price: string) => Promise<unknown>;
  onReset?: () => Promise<unknown>;
}) {
  const form = useForm<PriceValues>({ initialValues: { price: initial }, validate: validatePrice, validateInputOnBlur: true });
  const [resetProblem, setResetProblem] = useState<string | null>(null);
  const close = () => {
    setResetProblem(null);
    onClose();
  };
  return (
    <FormModal
      opened={opened}
      onClose={close}
      title={title}
      submitLabel="Save price"
      submitIcon={<IconDeviceFloppy size={16} aria-hidden />}
      form={form}
      initialValues={{ price: initial }}
      serverFields={PRICE_FIELDS}
      onSubmit={(values) => onSave(priceSchema.parse(values).price)}
      done={(values) => `${title}: ${formatCredits(priceSchema.parse(values).price)} per hour.`}
      extra={
        onReset && (
          <Button
            variant="subtle"
            onClick={() => {
              setResetProblem(null);
              void onReset().then(
                () => {
                  notifyDone(`${title}: back to the default.`);
                  close();
                },
                (err: unknown) => setResetProblem(errorMessage(err)),
              );
            }}
          >
            Reset to default
          </Button>
        )
      }
    >
      <TextInput
        label="Price per hour"
        description="Credits, a decimal such as 2.5"
        {...form.getInputProps('price')}
        data-autofocus
      />
      {resetProblem && (
        <Alert color="red" role="alert">
          {resetProblem}
        </Alert>
      )}
    </FormModal>
  );
}

const NEW_TIER: NewTierValues = { kind: 'fraction', denominator: 2, profile: '', price: '' };

function NewTierModal({ model, opened, onClose }: { model: GpuModelOut; opened: boolean; onClose: () => void }) {
  const create = useCreateTier();
  const form = useForm<NewTierValues>({ initialValues: NEW_TIER, validate: validateNewTier, validateInputOnBlur: true });
  const kind = form.values.kind;
  const kinds = (['fraction', 'exclusive', 'mig'] as const).filter((k) => k !== 'mig' || model.mig_geometry);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`Add tier to ${model.name}`}
      submitLabel="Add tier"
      submitIcon={<IconPlus size={16} aria-hidden />}
      form={form}
      initialValues={NEW_TIER}
      serverFields={TIER_FIELDS}
      onSubmit={(values) => create.mutateAsync({ modelId: model.id, body: tierRequest(values) })}
      done={() => `Added a tier to ${model.name}.`}
    >
      <SegmentedControl
        aria-label="Tier kind"
        value={kind}
        onChange={(value) => {
          form.setFieldValue('kind', value as TierKind);
          form.clearErrors();
        }}
        data={kinds.map((k) => ({ value: k, label: KIND_LABELS[k] }))}
      />
      {kind === 'fraction' && (
        <NumberInput
          label="Denominator"
          description={`The tier is 1/n of the card, n from ${LIMITS.denominator.min} to ${LIMITS.denominator.max.toLocaleString('en')}`}
          {...form.getInputProps('denominator')}
          min={LIMITS.denominator.min}
          max={LIMITS.denominator.max}
          clampBehavior="none"
          allowDecimal={false}
        />
      )}
      {kind === 'mig' && (
        <TextInput
          label="MIG profile"
          description={`A profile of the ${model.mig_geometry} geometry, such as 3g.40gb`}
          {...form.getInputProps('profile')}
        />
      )}
      <TextInput
        label="Price per hour"
        description="Leave empty for the default: the exclusive price times the tier's share"
        {...form.getInputProps('price')}
      />
    </FormModal>
  );
}

function TierRow({ tier, canManage }: { tier: TierOut; canManage: boolean }) {
  const setPrice = useSetTierPrice();
  const retire = useRetireTier();
  const [editing, setEditing] = useState(false);
  return (
    <Table.Tr style={tier.retired_at ? { opacity: 0.6 } : undefined}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {tier.name}
        </Text>
      </Table.Td>
      <Table.Td>{KIND_LABELS[tier.kind]}</Table.Td>
      <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatMemoryGiB(tier.vram_mib)}</Table.Td>
      <Table.Td>{tier.compute_percent}%</Table.Td>
      <Table.Td>
        <Group gap={6} wrap="nowrap">
          <Text size="sm" style={{ fontVariantNumeric: 'tabular-nums' }}>
            {tier.price_per_hour}
          </Text>
          {tier.price_is_default && (
            <Badge size="xs" variant="light" color="gray">
              default
            </Badge>
          )}
        </Group>
      </Table.Td>
      <Table.Td>
        {tier.retired_at ? (
          <Badge variant="light" color="gray">
            Retired {formatDate(tier.retired_at)}
          </Badge>
        ) : (
          <Badge variant="light" color="green">
            Offered
          </Badge>
        )}
      </Table.Td>
      {canManage && (
        <Table.Td>
          {!tier.retired_at && (
            <Group gap="xs" wrap="nowrap">
              <Button size="xs" variant="light" onClick={() => setEditing(true)}>
                Edit price
              </Button>
              <ConfirmButton
                label="Retire"
                title="Retire tier"
                message={`Retire ${tier.model} ${tier.name}? New sessions can no longer choose it; running ones keep it.`}
                confirmLabel="Retire tier"
                onConfirm={() => retire.mutateAsync(tier.id)}
              />
              <PriceModal
                opened={editing}
                onClose={() => setEditing(false)}
                title={`Price of ${tier.model} ${tier.name}`}
                initial={tier.price_per_hour}
                onSave={(price) => setPrice.mutateAsync({ tierId: tier.id, price })}
                onReset={tier.price_is_default ? undefined : () => setPrice.mutateAsync({ tierId: tier.id, price: null })}
              />
            </Group>
          )}
        </Table.Td>
      )}
    </Table.Tr>
  );
}

function ModelSection({ model, canManage }: { model: GpuModelOut; canManage: boolean }) {
  const setPrice = useSetExclusivePrice();
  const [editing, setEditing] = useState(false);
  const [adding, setAdding] = useState(false);
  return (
    <Paper withBorder p="md" radius="md" component="section" aria-label={model.name}>
      <Group justify="space-between" align="flex-start" mb="sm">
        <div>
          <Title order={3} size="h4">
            {model.name}
          </Title>
          <Text size="sm" c="dimmed">
            {formatMemoryGiB(model.memory_mib)} · splits into {model.split_count}
            {model.mig_geometry ? ` · MIG ${model.mig_geometry}` : ' · no MIG'}
          </Text>
          <Text size="sm" mt={4}>
            Exclusive price: <b>{model.exclusive_price}</b> credits per hour
          </Text>
        </div>
        {canManage && (
          <Group gap="xs">
            <Button size="xs" variant="light" onClick={() => setEditing(true)}>
              Edit exclusive price
            </Button>
            <Button size="xs" onClick={() => setAdding(true)}>
              Add tier
            </Button>
          </Group>
        )}
      </Group>
      {model.tiers.length === 0 ? (
        <Text size="sm" c="dimmed">
          No tiers yet.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={760}>
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Tier</Table.Th>
                <Table.Th>Kind</Table.Th>
                <Table.Th>VRAM</Table.Th>
                <Table.Th>Compute</Table.Th>
                <Table.Th>Price per hour</Table.Th>
                <Table.Th>Status</Table.Th>
                {canManage && <Table.Th aria-label="Actions" />}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {model.tiers.map((tier) => (
                <TierRow key={tier.id} tier={tier} canManage={canManage} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {canManage && (
        <>
          <PriceModal
            opened={editing}
            onClose={() => setEditing(false)}
            title={`Exclusive price of ${model.name}`}
            initial={model.exclusive_price}
            onSave={(price) => setPrice.mutateAsync({ modelId: model.id, price })}
          />
          <NewTierModal model={model} opened={adding} onClose={() => setAdding(false)} />
        </>
      )}
    </Paper>
  );
}

export function TiersPage() {
  const { can } = useSession();
  const models = useGpuModels();
  const canManage = can('capacity.manage');
  const [adding, setAdding] = useState(false);
  const items = models.data?.items ?? [];
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Tiers and prices"
        description="GPU models, the tiers each is offered in, and their prices in credits per hour."
        actions={
          canManage && (
            <Button leftSection={<IconPlus size={16} aria-hidden />} onClick={() => setAdding(true)}>
              Add GPU model
            </Button>
          )
        }
      />
      <QueryState query={models} isEmpty={items.length === 0} empty="No GPU models yet.">
        <Stack gap="lg">
          {items.map((model) => (
            <ModelSection key={model.id} model={model} canManage={canManage} />
          ))}
        </Stack>
      </QueryState>
      {canManage && <NewModelModal opened={adding} onClose={() => setAdding(false)} />}
    </Stack>
  );
}
