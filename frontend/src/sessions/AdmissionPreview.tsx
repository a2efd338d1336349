import { Alert, Group, Loader, Stack, Text } from '@mantine/core';
import { errorMessage } from '../api/errors';
import { useAdmissionPreview, type AdmissionPreviewIn, type AdmissionPreviewOut } from '../api/hooks/sessions';
import { formatWait } from '../queue/QueueTable';
import { formatCredits } from '../ui/amount';
import { formatDuration } from '../ui/format';

const OUTCOME: Record<AdmissionPreviewOut['outcome'], { title: string; color: string }> = {
  start: { title: 'Starts now', color: 'green' },
  queue: { title: 'Queues', color: 'blue' },
  no_capacity: { title: 'No capacity', color: 'red' },
  policy_denied: { title: 'Not allowed', color: 'red' },
  insufficient_credits: { title: 'Not enough credits', color: 'red' },
};

const SCOPE_WORDS: Record<NonNullable<AdmissionPreviewOut['policy_scope']>, string> = {
  global: 'the global policy',
  organization: "your organization's policy",
  group: "the group's policy",
  user: 'your own policy',
};

/** "about 12.5 hours"; "as long as you like" for a free choice. */
export function formatHours(hours: number | null): string {
  if (hours === null) return 'as long as you like (it is free)';
  return formatDuration(hours * 3600);
}

function Outcome({ preview }: { preview: AdmissionPreviewOut }) {
  const { title, color } = OUTCOME[preview.outcome];
  const heading =
    preview.outcome === 'queue' && preview.queue_position !== null
      ? `Queues at position ${preview.queue_position}`
      : title;
  const denied = color === 'red';
  return (
    <Alert color={color} title={heading} role="status">
      <Stack gap={4}>
        {preview.message && <Text size="sm">{preview.message}</Text>}
        {preview.outcome === 'queue' && (
          <Text size="sm">Estimated wait: {formatWait(preview.estimated_wait_seconds)}</Text>
        )}
        {preview.policy_key && (
          <Text size="sm">
            Set by {preview.policy_scope ? SCOPE_WORDS[preview.policy_scope] : 'a policy'} (<code>{preview.policy_key}</code>).
          </Text>
        )}
        <Text size="sm">
          {formatCredits(preview.price_per_hour)} per hour; you have {formatCredits(preview.available_credits)}
          {denied ? '.' : `, enough for ${formatHours(preview.hours_affordable)}.`}
        </Text>
      </Stack>
    </Alert>
  );
}

/** What admission would do with this choice now; asked again as the choice or the queue changes. */
export function AdmissionPreview({ request }: { request: AdmissionPreviewIn | null }) {
  const preview = useAdmissionPreview(request);
  if (request === null) return null;
  if (preview.error) {
    return (
      <Alert color="red" title="No preview" role="alert">
        {errorMessage(preview.error)}
      </Alert>
    );
  }
  if (!preview.data) {
    return (
      <Group gap="xs" role="status">
        <Loader size="sm" />
        <Text size="sm" c="dimmed">
          Checking whether it can start…
        </Text>
      </Group>
    );
  }
  return (
    <section aria-label="Admission preview">
      <Outcome preview={preview.data} />
    </section>
  );
}
