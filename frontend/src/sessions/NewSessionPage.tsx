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
import { useDebouncedValue } from '@mantine/hooks';
import { useMemo, useState, type FormEvent, type ReactNode } from 'react';
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
import { ApiError, errorMessage } from '../api/errors';
import type { TierOut } from '../api/types';
import { useSession } from '../auth/session';
import { PageHeader } from '../ui/PageHeader';
import { formatCredits } from '../ui/amount';
import { formatMemoryGiB } from '../ui/format';
import { QueryState } from '../ui/QueryState';
import { AdmissionPreview } from './AdmissionPreview';
import { SESSION_TYPE_OPTIONS } from './sessionParts';

const CPU_ONLY = 'cpu';
const NEW_HOME = 'new';
const DEFAULT_HOME_GIB = 10;
const MAX_SHARED_VOLUMES = 8;

/** Titles for the refusals the server explains in its message. */
const REFUSALS: Record<string, string> = {
  policy_denied: 'Not allowed by policy',
  insufficient_credits: 'Not enough credits',
  no_capacity: 'No capacity',
  image_not_found: 'Image not available',
  storage_limit: 'Storage limit reached',
  volume_in_use: 'Volume in use',
};

function tierLabel(tier: TierOut): string {
  return `${tier.model} ${tier.name} · ${formatMemoryGiB(tier.vram_mib)} · ${formatCredits(tier.price_per_hour)}/h`;
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

const asNumber = (value: number | string, fallback: number) => (typeof value === 'number' ? value : fallback);

export function NewSessionPage() {
  const { me } = useSession();
  const navigate = useNavigate();
  const create = useCreateSession();
  const catalog = useCatalog();
  const volumes = useVolumes();
  const groups = me.memberships.filter((membership) => membership.active);

  const [sessionType, setSessionType] = useState<SessionType>('jupyterlab');
  const [chosenImage, setChosenImage] = useState<string | null>(null);
  const [groupId, setGroupId] = useState<string | null>(groups[0]?.group_id ?? null);
  const [name, setName] = useState('');
  const [gpu, setGpu] = useState<string>(CPU_ONLY);
  const [cpuCores, setCpuCores] = useState<number | string>(1);
  const [memoryGiB, setMemoryGiB] = useState<number | string>(2);
  const [home, setHome] = useState<string>(NEW_HOME);
  const [homeSize, setHomeSize] = useState<number | string>(DEFAULT_HOME_GIB);
  const [shared, setShared] = useState<string[]>([]);
  const [problem, setProblem] = useState<{ title: string; message: string } | null>(null);

  const tiers = useTiers(groupId);
  const tierItems = useMemo(() => tiers.data?.items ?? [], [tiers.data]);
  const images = (catalog.data?.items ?? []).filter((image) => image.enabled && image.session_type === sessionType);
  // The first image of the type is chosen until another one is.
  const imageId = images.some((image) => image.id === chosenImage) ? chosenImage : (images[0]?.id ?? null);
  const tierId = tierItems.some((tier) => tier.id === gpu) ? gpu : null;
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

  const cores = asNumber(cpuCores, 0);
  const memoryMib = Math.round(asNumber(memoryGiB, 0) * 1024);
  const previewShape = useMemo<AdmissionPreviewIn | null>(
    () =>
      groupId && cores > 0 && memoryMib > 0
        ? { group_id: groupId, tier_id: tierId, cpu_cores: cores, memory_mib: memoryMib }
        : null,
    [groupId, tierId, cores, memoryMib],
  );
  // Typing a number should not ask the server at every keystroke.
  const [previewRequest] = useDebouncedValue(previewShape, 300, { leading: true });

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    const invalid = (message: string) => setProblem({ title: 'Check the form', message });
    if (!groupId) return invalid('Choose the group the session runs for.');
    if (!imageId) return invalid('Choose an image; there is none of this type in the catalog.');
    if (cores < 0.1) return invalid('Give the session at least 0.1 CPU cores.');
    if (memoryMib < 128) return invalid('Give the session at least 0.125 GiB of memory.');
    const size = asNumber(homeSize, 0);
    if (!homeVolumeId && (size < 1 || !Number.isInteger(size))) {
      return invalid('A new home volume needs a whole number of GiB.');
    }
    const body: SessionCreate = {
      session_type: sessionType,
      image_id: imageId,
      group_id: groupId,
      name: name.trim(),
      tier_id: tierId,
      cpu_millicores: Math.round(cores * 1000),
      memory_mib: memoryMib,
      home_volume_id: homeVolumeId,
      home_size_gib: homeVolumeId ? null : size,
      shared_volume_ids: sharedIds,
    };
    try {
      await create.mutateAsync(body);
      void navigate('/sessions');
    } catch (err) {
      const code = err instanceof ApiError ? err.code : '';
      setProblem({ title: REFUSALS[code] ?? 'Could not start the session', message: errorMessage(err) });
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
      <form onSubmit={(event) => void submit(event)} noValidate aria-label="New session">
        <Stack gap="md">
          <Section title="What">
            <TextInput
              label="Name"
              description="Optional; one is made up when empty"
              value={name}
              maxLength={80}
              onChange={(event) => setName(event.currentTarget.value)}
            />
            <div>
              <Text size="sm" fw={500} mb={4}>
                Type
              </Text>
              <SegmentedControl
                aria-label="Type"
                value={sessionType}
                onChange={(value) => setSessionType(value as SessionType)}
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
                onChange={setChosenImage}
                allowDeselect={false}
                description={images.find((image) => image.id === imageId)?.description || undefined}
              />
            </QueryState>
            <Select
              label="Group"
              description="Its policy and its credits apply"
              data={groups.map((m) => ({ value: m.group_id, label: `${m.group_name} (${m.org_name})` }))}
              value={groupId}
              onChange={(value) => {
                setGroupId(value);
                setShared([]);
              }}
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
                value={tierId ?? CPU_ONLY}
                onChange={(value) => setGpu(value ?? CPU_ONLY)}
                allowDeselect={false}
              />
            </QueryState>
            <Group grow align="flex-start">
              <NumberInput
                label="CPU cores"
                value={cpuCores}
                onChange={setCpuCores}
                min={0.1}
                max={256}
                step={0.5}
                decimalScale={1}
              />
              <NumberInput
                label="Memory (GiB)"
                value={memoryGiB}
                onChange={setMemoryGiB}
                min={0.125}
                max={4096}
                step={1}
                decimalScale={3}
              />
            </Group>
          </Section>

          <Section title="Volumes">
            <QueryState query={volumes}>
              <Radio.Group
                label="Home volume"
                description="Mounted as your home directory"
                value={homeVolumeId ?? NEW_HOME}
                onChange={setHome}
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
                  value={homeSize}
                  onChange={setHomeSize}
                  min={1}
                  max={16384}
                  allowDecimal={false}
                  maw={280}
                />
              )}
              {groupShared.length > 0 && (
                <Checkbox.Group
                  label="Shared volumes of the group"
                  description={`Up to ${MAX_SHARED_VOLUMES}`}
                  value={sharedIds}
                  onChange={setShared}
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
