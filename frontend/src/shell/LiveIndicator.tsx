import { Badge, Tooltip } from '@mantine/core';
import { useLiveState } from '../api/live';

const INTERRUPTED = 'Live updates interrupted — reconnecting';

/** Shown only while the event stream is down, so stale screens do not pass for current ones. */
export function LiveIndicator() {
  const state = useLiveState();
  if (state !== 'interrupted') return null;
  return (
    <Tooltip label={INTERRUPTED}>
      <Badge role="status" aria-label={INTERRUPTED} color="orange" variant="light" style={{ flexShrink: 0 }}>
        Reconnecting…
      </Badge>
    </Tooltip>
  );
}
