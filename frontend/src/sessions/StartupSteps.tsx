import { Badge, Group, Loader, Stack, Text, ThemeIcon, Timeline, Title } from '@mantine/core';
import { IconAlertTriangle, IconCheck, IconCircleDashed, IconX } from '@tabler/icons-react';
import type { SessionOut, StartupStepOut } from '../api/hooks/sessions';
import { useNow } from '../queue/countdown';
import { formatDuration, formatMemoryGiB } from '../ui/format';

type StartupStep = StartupStepOut;

type Milestone = 'allocated' | 'scheduled' | 'image' | 'started' | 'ready';
const MILESTONES: Milestone[] = ['allocated', 'scheduled', 'image', 'started', 'ready'];

const DONE_LABELS: Record<Milestone, string> = {
  allocated: 'Card allocated',
  scheduled: 'Placed on a machine',
  image: 'Image downloaded',
  started: 'Container started',
  ready: 'Program listening',
};

const WAITING_LABELS: Record<Milestone, string> = {
  allocated: 'Allocating a card',
  scheduled: 'Finding a machine',
  image: 'Downloading the image',
  started: 'Starting the container',
  ready: 'Waiting for the program to listen',
};

/** A Kubernetes reason (with its message, for the generic ones) in words a user understands. */
export function explainReason(reason: string, message = ''): string {
  const aboutImage = /pull|image/i.test(message);
  switch (reason) {
    case 'FailedScheduling':
    case 'Unschedulable':
      return 'No machine can take the session right now: there are not enough free resources.';
    case 'ErrImagePull':
    case 'ImagePullBackOff':
    case 'ErrImageNeverPull':
      return "The session's image could not be downloaded.";
    case 'InvalidImageName':
      return "The session's image name is not valid.";
    case 'CrashLoopBackOff':
      return 'The program inside the session keeps crashing, so it is being restarted.';
    case 'OOMKilled':
      return 'The program ran out of memory and was stopped.';
    case 'Error':
      return 'The program stopped with an error.';
    case 'FailedMount':
    case 'FailedAttachVolume':
      return 'One of the session’s volumes could not be attached.';
    case 'CreateContainerConfigError':
    case 'CreateContainerError':
    case 'RunContainerError':
    case 'ContainerCannotRun':
      return 'The session’s container could not be created.';
    case 'Evicted':
      return 'The machine ran short of resources and had to stop the session.';
    case 'Unhealthy':
      return 'The program does not answer yet.';
    case 'BackOff':
      return aboutImage
        ? "The session's image could not be downloaded; retrying."
        : 'The program keeps stopping, so it is being restarted.';
    case 'Failed':
      return aboutImage ? "The session's image could not be downloaded." : 'The cluster could not start the session.';
    default:
      return 'The cluster reported a problem.';
  }
}

/** Whether a session's start-up is worth showing: while it starts, and after a failed start. */
export function showsStartup(session: SessionOut): boolean {
  const steps = session.startup_steps ?? [];
  if (session.state === 'starting') return true;
  return (session.state === 'failed' || session.state === 'lost') && steps.length > 0;
}

function reached(steps: StartupStep[]): Partial<Record<Milestone, StartupStep>> {
  const byStep = new Map(steps.filter((s) => s.step !== 'warning').map((s) => [s.step, s]));
  const found: Partial<Record<Milestone, StartupStep>> = {};
  for (const name of ['allocated', 'scheduled', 'started', 'ready'] as const) {
    const step = byStep.get(name);
    if (step) found[name] = step;
  }
  // The image is there once it was pulled, or once the container runs (it was on the machine).
  const image = byStep.get('pulled') ?? (byStep.get('started') && byStep.get('pulling'));
  if (image) found.image = image;
  else if (byStep.get('started')) found.image = { ...byStep.get('started')!, message: 'already on the machine' };
  return found;
}

function seconds(from: string | null | undefined, to: string | number): number | null {
  if (!from) return null;
  const start = new Date(from).getTime();
  const end = typeof to === 'number' ? to : new Date(to).getTime();
  return Number.isNaN(start) || Number.isNaN(end) ? null : Math.max(0, (end - start) / 1000);
}

function Warning({ step }: { step: StartupStep }) {
  return (
    <Stack gap={2} role="alert" aria-label={step.reason}>
      <Text size="sm" c="red" fw={500}>
        {explainReason(step.reason, step.message)}
      </Text>
      <Group gap={6} wrap="nowrap" align="baseline">
        <Badge size="xs" variant="outline" color="red" style={{ flexShrink: 0 }}>
          {step.reason}
        </Badge>
        {step.count > 1 && (
          <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
            {step.count} times
          </Text>
        )}
        {step.message && (
          <Text size="xs" c="dimmed" lineClamp={2} style={{ wordBreak: 'break-word' }}>
            {step.message}
          </Text>
        )}
      </Group>
    </Stack>
  );
}

/**
 * How a session's latest start goes, as its cluster reports it: each step with the time since
 * the start was asked for, the current one spinning while it starts, and the warnings that
 * explain a stuck or failed start in plain words (their Kubernetes reason beside them).
 */
export function StartupSteps({ session, compact = false }: { session: SessionOut; compact?: boolean }) {
  const steps = session.startup_steps ?? [];
  const starting = session.state === 'starting';
  const failed = session.state === 'failed' || session.state === 'lost';
  const now = useNow(starting, 15_000);
  const requested = session.startup_requested_at ?? session.state_changed_at;
  const done = reached(steps);
  const current = MILESTONES.findIndex((m) => !done[m]);
  const lastDone = current === -1 ? MILESTONES.length - 1 : current - 1;
  const lastDoneAt = lastDone >= 0 ? done[MILESTONES[lastDone]]?.at : requested;
  // Warnings since the last step reached explain why the next one is not reached yet; after a
  // failed start every warning is part of the story.
  const warnings = steps.filter(
    (s) => s.step === 'warning' && (failed || !lastDoneAt || new Date(s.at).getTime() >= new Date(lastDoneAt).getTime()),
  );
  const shown = compact ? MILESTONES.slice(0, Math.max(current, 0) + 1) : MILESTONES;
  const label = (m: Milestone) =>
    m === 'allocated' && !session.tier_id ? (done[m] ? 'CPU and memory allocated' : 'Allocating CPU and memory') : null;

  return (
    <Stack gap="xs" aria-label="Start-up steps">
      {!compact && (
        <Title order={3} size="h5">
          {failed ? 'How the start went' : 'Start-up'}
        </Title>
      )}
      <Timeline active={lastDone} bulletSize={22} lineWidth={2}>
        {shown.map((m, index) => {
          const step = done[m];
          const isCurrent = index === current;
          const bullet = step ? (
            <ThemeIcon size={22} radius="xl" color="teal">
              <IconCheck size={14} />
            </ThemeIcon>
          ) : isCurrent && starting ? (
            <Loader size={14} aria-label="in progress" />
          ) : isCurrent && failed ? (
            <ThemeIcon size={22} radius="xl" color="red">
              <IconX size={14} />
            </ThemeIcon>
          ) : (
            <IconCircleDashed size={14} />
          );
          const elapsed = step ? seconds(requested, step.at) : isCurrent && starting ? seconds(lastDoneAt, now) : null;
          const title = label(m) ?? (step ? DONE_LABELS[m] : WAITING_LABELS[m]);
          const size = m === 'image' && step?.image_size_bytes != null ? formatMemoryGiB(step.image_size_bytes / 1048576) : null;
          return (
            <Timeline.Item
              key={m}
              bullet={bullet}
              title={
                <Text size="sm" fw={isCurrent ? 600 : 400} c={step || isCurrent ? undefined : 'dimmed'}>
                  {title}
                </Text>
              }
            >
              {step && (
                <Text size="xs" c="dimmed">
                  after {formatDuration(elapsed)}
                  {size && ` · ${size}`}
                  {!compact && step.message && ` · ${step.message}`}
                </Text>
              )}
              {!step && isCurrent && starting && (
                <Text size="xs" c="dimmed">
                  for {formatDuration(elapsed)}
                </Text>
              )}
              {isCurrent && warnings.length > 0 && (
                <Stack gap={6} mt={4}>
                  {(compact ? warnings.slice(-1) : warnings.slice().reverse()).map((w) => (
                    <Warning key={w.reason} step={w} />
                  ))}
                </Stack>
              )}
            </Timeline.Item>
          );
        })}
      </Timeline>
      {current === -1 && warnings.length > 0 && failed && (
        <Group gap="xs">
          <IconAlertTriangle size={16} color="var(--mantine-color-red-6)" />
          <Stack gap={6}>
            {warnings.slice().reverse().map((w) => (
              <Warning key={w.reason} step={w} />
            ))}
          </Stack>
        </Group>
      )}
    </Stack>
  );
}
