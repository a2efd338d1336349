import { Alert, Badge, Button, Group, NumberInput, Paper, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { errorMessage } from '../../api/errors';
import {
  useCreateGpuModel,
  useCreateTier,
  useGpuModels,
  useRetireTier,
  useSetExclusivePrice,
  useSetTierPrice,
} from '../../api/hooks/capacity';
import type { GpuModelOut, TierIn, TierKind, TierOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { parseAmount } from '../../ui/amount';
import { asNumber, outOfRange } from '../../ui/form';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDate, formatMemoryGiB } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';
import { PageHeader } from '../../ui/PageHeader';
import { FormModal } from './FormModal';

// The server's bounds (GpuModelIn, TierIn).
const MODEL_MEMORY = { min: 1, max: 2_147_483_647, integer: true, unit: 'MiB' };
const SPLIT = { min: 1, max: 1024, integer: true };
const DENOMINATOR = { min: 2, max: 1024, integer: true };

const KIND_LABELS: Record<TierKind, string> = { fraction: 'Fraction', exclusive: 'Exclusive', mig: 'MIG' };

/** A price as typed: empty is allowed only where the default applies. */
function checkPrice(text: string): { ok: true; value: string } | { ok: false; error: string } {
  return parseAmount(text, { allowZero: true });
}

function NewModelModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const create = useCreateGpuModel();
  const [name, setName] = useState('');
  const [price, setPrice] = useState('');
  const [memory, setMemory] = useState<number | string>('');
  const [split, setSplit] = useState<number | string>('');
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="Add GPU model"
      submitLabel="Add model"
      onSubmit={() => {
        if (!name.trim()) return 'Enter the model name as the cluster reports it.';
        const checked = checkPrice(price);
        if (!checked.ok) return checked.error;
        const wrong = (memory !== '' && outOfRange(memory, MODEL_MEMORY)) || (split !== '' && outOfRange(split, SPLIT));
        if (wrong) return wrong;
        return create.mutateAsync({
          name: name.trim(),
          exclusive_price: checked.value,
          memory_mib: memory === '' ? null : asNumber(memory),
          split_count: split === '' ? null : asNumber(split),
        });
      }}
    >
      <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
      <TextInput
        label="Exclusive price"
        description="Credits per hour for the whole card"
        value={price}
        onChange={(e) => setPrice(e.currentTarget.value)}
      />
      <NumberInput
        label="Memory (MiB)"
        description="Optional"
        value={memory}
        onChange={setMemory}
        min={MODEL_MEMORY.min}
        error={memory === '' ? null : outOfRange(memory, MODEL_MEMORY)}
      />
      <NumberInput
        label="Split count"
        description="Optional"
        value={split}
        onChange={setSplit}
        min={SPLIT.min}
        max={SPLIT.max}
        error={split === '' ? null : outOfRange(split, SPLIT)}
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
  const [price, setPrice] = useState(initial);
  const [resetProblem, setResetProblem] = useState<string | null>(null);
  useEffect(() => {
    if (opened) {
      setPrice(initial);
      setResetProblem(null);
    }
  }, [opened, initial]);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={title}
      submitLabel="Save price"
      onSubmit={() => {
        const checked = checkPrice(price);
        return checked.ok ? onSave(checked.value) : checked.error;
      }}
      extra={
        onReset && (
          <Button
            variant="subtle"
            onClick={() => {
              setResetProblem(null);
              void onReset().then(onClose, (err: unknown) => setResetProblem(errorMessage(err)));
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
        value={price}
        onChange={(e) => setPrice(e.currentTarget.value)}
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

function NewTierModal({ model, opened, onClose }: { model: GpuModelOut; opened: boolean; onClose: () => void }) {
  const create = useCreateTier();
  const [kind, setKind] = useState<TierKind>('fraction');
  const [denominator, setDenominator] = useState<number | string>(2);
  const [profile, setProfile] = useState('');
  const [price, setPrice] = useState('');
  const kinds = (['fraction', 'exclusive', 'mig'] as const).filter((k) => k !== 'mig' || model.mig_geometry);
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`Add tier to ${model.name}`}
      submitLabel="Add tier"
      onSubmit={() => {
        const body: TierIn = { kind };
        if (kind === 'fraction') {
          if (outOfRange(denominator, DENOMINATOR)) return 'A fraction is 1/n with n a whole number from 2 to 1,024.';
          body.denominator = asNumber(denominator);
        }
        if (kind === 'mig') {
          if (!profile.trim()) return 'Enter the MIG profile, such as 3g.40gb.';
          body.mig_profile = profile.trim();
        }
        if (price.trim()) {
          const checked = checkPrice(price);
          if (!checked.ok) return checked.error;
          body.price_per_hour = checked.value;
        }
        return create.mutateAsync({ modelId: model.id, body });
      }}
    >
      <SegmentedControl
        aria-label="Tier kind"
        value={kind}
        onChange={(value) => setKind(value as TierKind)}
        data={kinds.map((k) => ({ value: k, label: KIND_LABELS[k] }))}
      />
      {kind === 'fraction' && (
        <NumberInput
          label="Denominator"
          description="The tier is 1/n of the card"
          value={denominator}
          onChange={setDenominator}
          min={DENOMINATOR.min}
          max={DENOMINATOR.max}
          error={outOfRange(denominator, DENOMINATOR)}
        />
      )}
      {kind === 'mig' && (
        <TextInput
          label="MIG profile"
          description={`A profile of the ${model.mig_geometry} geometry, such as 3g.40gb`}
          value={profile}
          onChange={(e) => setProfile(e.currentTarget.value)}
        />
      )}
      <TextInput
        label="Price per hour"
        description="Leave empty for the default: the exclusive price times the tier's share"
        value={price}
        onChange={(e) => setPrice(e.currentTarget.value)}
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
        actions={canManage && <Button onClick={() => setAdding(true)}>Add GPU model</Button>}
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
