import {
  Alert,
  Anchor,
  Button,
  Checkbox,
  Group,
  NumberInput,
  Paper,
  Radio,
  SegmentedControl,
  Select,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { useDebouncedValue } from '@mantine/hooks';
import { useMemo, useState, type ReactNode } from 'react';
import { Link, useNavigate } from 'react-router';
import { useTiers } from '../api/hooks/capacity';
import {
  useCatalog,
  useCreateSession,
  useVolumes,
  type AdmissionPreviewIn,
  type SessionCreate,
  type SessionType,
  type VolumeOut,
} from '../api/hooks/sessions';
import { ApiError } from '../api/errors';
import type { UsableTierOut } from '../api/types';
import { useSession } from '../auth/session';
import { PageHeader } from '../ui/PageHeader';
import { formatCredits } from '../ui/amount';
import { formatDuration, formatMemoryGiB } from '../ui/format';
import { QueryState } from '../ui/QueryState';
import { asNumber, serverErrors } from '../ui/form';
import { AdmissionPreview } from './AdmissionPreview';
import { BookedForGroup } from './BookedForGroup';
import { SizingAdvice } from './SizingAdvice';
import {
  CPU_ONLY,
  defaultTier,
  LIMITS,
  MAX_SHARED_VOLUMES,
  NEW_HOME,
  validateNewSession,
  SERVER_FIELDS,
  type NewSessionValues,
} from './newSessionForm';
import { SESSION_TYPE_OPTIONS } from './sessionParts';

const DEFAULT_HOME_GIB = 10;

/** Titles for the refusals the server explains in its message. */
const REFUSALS: Record<string, string> = {
  policy_denied: 'Not allowed by policy',
  insufficient_credits: 'Not enough credits',
  no_capacity: 'No capacity',
  image_not_found: 'Image not available',
  storage_limit: 'Storage limit reached',
  volume_in_use: 'Volume in use',
};

/** What the tier offers now: free slots, or else the queue's estimated wait. */
function tierNow(tier: UsableTierOut): string {
  if (tier.free_slots > 0) return `${tier.free_slots.toLocaleString()} free now`;
  if (tier.estimated_wait_seconds === null) return 'no card offers it now';
  return `none free, queues ${formatDuration(tier.estimated_wait_seconds)}`;
}

function tierLabel(tier: UsableTierOut): string {
  const price = `${formatCredits(tier.price_per_hour)}/h`;
  return `${tier.model} ${tier.name} · ${formatMemoryGiB(tier.vram_mib)} · ${price} · ${tierNow(tier)}`;
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Paper withBorder p="md" radius="md" component="section" aria-label={title}>
      <Title order={3} size="h5" mb="sm">
        {title}
      </Title>
      <Stack gap="sm">{children}</Stack>
    </Paper>
  );
}

function sharedLabel(volume: VolumeOut): string {
  return `${volume.name} (${volume.size_gib} GiB${volume.access_mode === 'ReadOnlyMany' ? ', read-only' : ''})`;
}

/** A number within bounds for the preview, or null while what is typed is not one. */
function usable(value: number | string, range: { min: number; max: number }): number | null {
  const n = asNumber(value);
  return Number.isFinite(n) && n >= range.min && n <= range.max ? n : null;
}

export function NewSessionPage() {
  const { me } = useSession();
  const navigate = useNavigate();
  const create = useCreateSession();
  const catalog = useCatalog();
  const volumes = useVolumes();
  const groups = me.memberships.filter((membership) => membership.active);

  const form = useForm<NewSessionValues>({
    initialValues: {
      name: '',
      sessionType: 'jupyterlab',
      image: null,
      group: groups[0]?.group_id ?? null,
      gpu: null,
      cpuCores: 1,
      memoryGiB: 2,
      home: NEW_HOME,
      homeSizeGiB: DEFAULT_HOME_GIB,
      shared: [],
    },
    validate: validateNewSession,
    validateInputOnBlur: true,
  });
  const [problem, setProblem] = useState<{ title: string; message: string } | null>(null);
  const { sessionType, group: groupId, gpu, home, shared } = form.values;

  const tiers = useTiers(groupId);
  const tierItems = useMemo(() => tiers.data?.items ?? [], [tiers.data]);
  const images = (catalog.data?.items ?? []).filter((image) => image.enabled && image.session_type === sessionType);
  // The first image of the type is chosen until another one is.
  const imageId = images.some((image) => image.id === form.values.image) ? form.values.image : (images[0]?.id ?? null);
  // What the person chose stands while the group offers it; until then, the default.
  const chosen = gpu === CPU_ONLY || tierItems.some((tier) => tier.id === gpu) ? gpu : null;
  const gpuChoice = chosen ?? defaultTier(tierItems);
  const tierId = gpuChoice === CPU_ONLY ? null : gpuChoice;
  const freeHomes = (volumes.data?.items ?? []).filter((v) => v.kind === 'home' && v.used_by.length === 0);
  const groupShared = (volumes.data?.items ?? []).filter((v) => v.kind === 'shared' && v.group_id === groupId);
  const homeVolumeId = freeHomes.some((v) => v.id === home) ? home : null;
  const sharedIds = shared.filter((id) => groupShared.some((v) => v.id === id));

  const gpuOptions = useMemo(() => {
    const byModel = new Map<string, { value: string; label: string }[]>();
    for (const tier of tierItems) {
      byModel.set(tier.model, [...(byModel.get(tier.model) ?? []), { value: tier.id, label: tierLabel(tier) }]);
    }
    return [
      { group: 'No GPU', items: [{ value: CPU_ONLY, label: 'CPU only' }] },
      ...[...byModel.entries()].map(([group, items]) => ({ group, items })),
    ];
  }, [tierItems]);

  // The preview asks only about what could be sent: out-of-range numbers have their field error.
  const cores = usable(form.values.cpuCores, LIMITS.cpuCores);
  const memoryGiB = usable(form.values.memoryGiB, LIMITS.memoryGiB);
  const memoryMib = memoryGiB === null ? null : Math.round(memoryGiB * 1024);
  const previewShape = useMemo<AdmissionPreviewIn | null>(
    () =>
      // Not before the tiers are known: the default GPU depends on them.
      groupId && tiers.data && cores !== null && memoryMib !== null
        ? { group_id: groupId, tier_id: tierId, cpu_cores: cores, memory_mib: memoryMib }
        : null,
    [groupId, tiers.data, tierId, cores, memoryMib],
  );
  // Typing a number should not ask the server at every keystroke.
  const [previewRequest] = useDebouncedValue(previewShape, 300, { leading: true });

  const submit = async (values: NewSessionValues) => {
    setProblem(null);
    if (values.home !== NEW_HOME && !homeVolumeId) {
      // The chosen volume was taken or deleted since: never make a new one in its place unasked.
      form.setFieldError('home', 'That volume is no longer free. Choose another, or a new one.');
      return;
    }
    if (!imageId) {
      form.setFieldError('image', 'Choose an image; there is none of this type in the catalog.');
      return;
    }
    const body: SessionCreate = {
      session_type: values.sessionType,
      image_id: imageId,
      group_id: values.group!,
      name: values.name.trim(),
      tier_id: tierId,
      cpu_millicores: Math.round(asNumber(values.cpuCores) * 1000),
      memory_mib: Math.round(asNumber(values.memoryGiB) * 1024),
      home_volume_id: homeVolumeId,
      home_size_gib: homeVolumeId ? null : asNumber(values.homeSizeGiB),
      shared_volume_ids: sharedIds,
    };
    try {
      await create.mutateAsync(body);
      void navigate('/sessions');
    } catch (err) {
      const { onFields, rest } = serverErrors(err, SERVER_FIELDS, Object.keys(form.values));
      form.setErrors(onFields);
      if (rest) {
        const code = err instanceof ApiError ? err.code : '';
        setProblem({ title: REFUSALS[code] ?? 'Could not start the session', message: rest });
      }
    }
  };

  if (groups.length === 0) {
    return (
      <Stack maw={800}>
        <PageHeader title="New session" />
        <Text c="dimmed" size="sm">
          Sessions run for a group, and you are not in one. Ask an administrator to add you.
        </Text>
      </Stack>
    );
  }

  return (
    <Stack maw={800} gap="lg">
      <div>
        <Anchor component={Link} to="/sessions" size="sm">
          ← Sessions
        </Anchor>
        <PageHeader title="New session" description="Choose what runs, on what, and which volumes it keeps." />
      </div>
      <form onSubmit={form.onSubmit((values) => void submit(values))} noValidate aria-label="New session">
        <Stack gap="md">
          <Section title="What">
            <TextInput
              label="Name"
              description="Optional; one is made up when empty"
              {...form.getInputProps('name')}
            />
            <div>
              <Text size="sm" fw={500} mb={4}>
                Type
              </Text>
              <SegmentedControl
                aria-label="Type"
                value={sessionType}
                onChange={(value) => form.setFieldValue('sessionType', value as SessionType)}
                data={SESSION_TYPE_OPTIONS}
              />
            </div>
            <QueryState
              query={catalog}
              isEmpty={images.length === 0}
              empty="No image of this type is offered. Choose another type."
            >
              <Select
                label="Image"
                data={images.map((image) => ({ value: image.id, label: image.name }))}
                value={imageId}
                onChange={(value) => form.setFieldValue('image', value)}
                error={form.errors.image}
                allowDeselect={false}
                description={images.find((image) => image.id === imageId)?.description || undefined}
              />
            </QueryState>
            <Select
              label="Group"
              description="Its policy and its credits apply"
              data={groups.map((m) => ({ value: m.group_id, label: `${m.group_name} (${m.org_name})` }))}
              value={groupId}
              onChange={(value) => form.setValues({ group: value, shared: [] })}
              error={form.errors.group}
              allowDeselect={false}
            />
          </Section>

          <Section title="Resources">
            <QueryState query={tiers}>
              <Select
                label="GPU"
                description={
                  tierItems.length === 0 ? 'No GPU tier is offered to this group; the session runs on CPUs.' : undefined
                }
                data={gpuOptions}
                value={gpuChoice}
                onChange={(value) => form.setFieldValue('gpu', value ?? CPU_ONLY)}
                error={form.errors.gpu}
                allowDeselect={false}
              />
              <BookedForGroup groupId={groupId} tierId={tierId} />
              <SizingAdvice
                image={images.find((image) => image.id === imageId)?.reference ?? null}
                tierId={tierId}
                onChoose={(smaller) => form.setFieldValue('gpu', smaller)}
              />
            </QueryState>
            <Group grow align="flex-start">
              <NumberInput
                label="CPU cores"
                description={`${LIMITS.cpuCores.min} to ${LIMITS.cpuCores.max}`}
                {...form.getInputProps('cpuCores')}
                min={LIMITS.cpuCores.min}
                max={LIMITS.cpuCores.max}
                clampBehavior="none"
                step={0.5}
              />
              <NumberInput
                label="Memory (GiB)"
                description={`${LIMITS.memoryGiB.min} to ${LIMITS.memoryGiB.max.toLocaleString()}`}
                {...form.getInputProps('memoryGiB')}
                min={LIMITS.memoryGiB.min}
                max={LIMITS.memoryGiB.max}
                clampBehavior="none"
                step={1}
              />
            </Group>
          </Section>

          <Section title="Volumes">
            <QueryState query={volumes}>
              <Radio.Group
                label="Home volume"
                description="Mounted as your home directory"
                value={homeVolumeId ?? NEW_HOME}
                onChange={(value) => form.setFieldValue('home', value)}
                error={form.errors.home}
              >
                <Stack gap="xs" mt="xs">
                  <Radio value={NEW_HOME} label="A new volume" />
                  {freeHomes.map((volume) => (
                    <Radio key={volume.id} value={volume.id} label={`${volume.name} (${volume.size_gib} GiB)`} />
                  ))}
                </Stack>
              </Radio.Group>
              {!homeVolumeId && (
                <NumberInput
                  label="Size of the new home volume (GiB)"
                  description={`1 to ${LIMITS.homeSizeGiB.max.toLocaleString()}, whole GiB`}
                  {...form.getInputProps('homeSizeGiB')}
                  min={LIMITS.homeSizeGiB.min}
                  max={LIMITS.homeSizeGiB.max}
                  clampBehavior="none"
                  maw={280}
                />
              )}
              {groupShared.length > 0 && (
                <Checkbox.Group
                  label="Shared volumes of the group"
                  description={`Up to ${MAX_SHARED_VOLUMES}`}
                  value={sharedIds}
                  onChange={(value) => form.setFieldValue('shared', value)}
                  error={form.errors.shared}
                >
                  <Stack gap="xs" mt="xs">
                    {groupShared.map((volume) => (
                      <Checkbox
                        key={volume.id}
                        value={volume.id}
                        label={sharedLabel(volume)}
                        disabled={!sharedIds.includes(volume.id) && sharedIds.length >= MAX_SHARED_VOLUMES}
                      />
                    ))}
                  </Stack>
                </Checkbox.Group>
              )}
            </QueryState>
          </Section>

          <AdmissionPreview request={previewRequest} />

          {problem && (
            <Alert color="red" title={problem.title} role="alert">
              {problem.message}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" component={Link} to="/sessions">
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending}>
              Start session
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
