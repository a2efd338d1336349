import { Anchor, Badge, Group, Stack, Text } from '@mantine/core';
import { Link } from 'react-router';
import type { SessionOut, SessionState, SessionType, VolumeOut } from '../api/hooks/sessions';
import { countOf, formatMemoryGiB } from '../ui/format';

export const SESSION_TYPE_LABELS: Record<SessionType, string> = {
  vscode: 'VS Code',
  jupyterlab: 'JupyterLab',
  terminal: 'Terminal',
};

export const SESSION_TYPE_OPTIONS = (Object.keys(SESSION_TYPE_LABELS) as SessionType[]).map((value) => ({
  value,
  label: SESSION_TYPE_LABELS[value],
}));

export const STATE_LABELS: Record<SessionState, { label: string; color: string }> = {
  queued: { label: 'Queued', color: 'blue' },
  starting: { label: 'Starting', color: 'cyan' },
  running: { label: 'Running', color: 'green' },
  pausing: { label: 'Pausing', color: 'yellow' },
  paused: { label: 'Paused', color: 'gray' },
  resuming: { label: 'Resuming', color: 'cyan' },
  stopping: { label: 'Stopping', color: 'orange' },
  stopped: { label: 'Stopped', color: 'gray' },
  failed: { label: 'Failed', color: 'red' },
  lost: { label: 'Lost', color: 'red' },
};

export const STATE_OPTIONS = (Object.keys(STATE_LABELS) as SessionState[]).map((value) => ({
  value,
  label: STATE_LABELS[value].label,
}));

/** States that wait for a card: they have a queue position and an estimated wait. */
export const WAITING_STATES: readonly SessionState[] = ['queued', 'resuming'];

export function StateBadge({ state }: { state: SessionState }) {
  const { label, color } = STATE_LABELS[state];
  return (
    <Badge variant="light" color={color} style={{ overflow: 'visible' }}>
      {label}
    </Badge>
  );
}

/** The state with the reason it is in it, e.g. "Queued — No free 1/4 slot." */
export function StateWithReason({ session }: { session: Pick<SessionOut, 'state' | 'state_reason'> }) {
  return (
    <Group gap="xs" wrap="nowrap" align="center">
      <StateBadge state={session.state} />
      {session.state_reason && (
        <Text size="sm" c="dimmed">
          {session.state_reason}
        </Text>
      )}
    </Group>
  );
}

/** "A100-80GB 1/4 · 20 GiB", or "CPU only" for a session without a GPU slice. */
export function gpuSlice(session: Pick<SessionOut, 'model' | 'tier_name' | 'vram_mib'>): string {
  if (!session.model) return 'CPU only';
  const name = [session.model, session.tier_name].filter(Boolean).join(' ');
  return session.vram_mib ? `${name} · ${formatMemoryGiB(session.vram_mib)}` : name;
}

/** "peak 3.1 GiB of 20 GiB", or null when nothing was measured yet. */
export function peakVram(session: Pick<SessionOut, 'peak_vram_mib' | 'vram_mib'>): string | null {
  if (session.peak_vram_mib === null) return null;
  const peak = `peak ${formatMemoryGiB(session.peak_vram_mib)}`;
  return session.vram_mib ? `${peak} of ${formatMemoryGiB(session.vram_mib)}` : peak;
}

/** "GPU 45% · 3.1 GiB VRAM in use", or null when the cluster reported nothing. */
export function utilization(session: Pick<SessionOut, 'gpu_util_percent' | 'vram_used_mib'>): string | null {
  const parts: string[] = [];
  if (session.gpu_util_percent !== null) {
    parts.push(`GPU ${session.gpu_util_percent.toLocaleString(undefined, { maximumFractionDigits: 0 })}%`);
  }
  if (session.vram_used_mib !== null) parts.push(`${formatMemoryGiB(session.vram_used_mib)} VRAM in use`);
  return parts.length ? parts.join(' · ') : null;
}

/** "2 cores · 8 GiB". */
export function cpuAndMemory(session: Pick<SessionOut, 'cpu_millicores' | 'memory_mib'>): string {
  const cores = session.cpu_millicores / 1000;
  const coreText = countOf(cores, 'core');
  return `${coreText} · ${formatMemoryGiB(session.memory_mib)}`;
}

/** The sessions a volume is mounted in, with their states; `linked` when the viewer may open them. */
export function VolumeUsers({ volume, linked = false }: { volume: VolumeOut; linked?: boolean }) {
  const others = volume.used_by_others ?? 0;
  if (volume.used_by.length === 0 && others === 0) {
    return (
      <Text size="sm" c="dimmed">
        Not in use
      </Text>
    );
  }
  return (
    <Stack gap={4}>
      {volume.used_by.map((user) => (
        <Group key={user.session_id} gap="xs" wrap="nowrap">
          {linked ? (
            <Anchor component={Link} to={`/sessions/${user.session_id}`} size="sm">
              {user.name}
            </Anchor>
          ) : (
            <Text size="sm">{user.name}</Text>
          )}
          <StateBadge state={user.state} />
        </Group>
      ))}
      {others > 0 && (
        <Text size="sm" c="dimmed">
          {volume.used_by.length > 0 ? 'and ' : ''}
          {countOf(others, 'session')} of other members
        </Text>
      )}
    </Stack>
  );
}
