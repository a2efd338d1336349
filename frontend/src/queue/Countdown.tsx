import { Text } from '@mantine/core';
import { formatDateTime } from '../ui/format';
import { useCountdown } from './countdown';

/**
 * "in 9:41 (at 10:42)", ticking each second. The ticking part is a timer, which screen readers
 * do not announce on each change (role timer is not live), so an alert around it is read once.
 */
export function Countdown({ deadline, passed = 'now' }: { deadline: string; passed?: string }) {
  const { left, countdown, clock } = useCountdown(deadline);
  return (
    <Text component="span" inherit style={{ whiteSpace: 'nowrap' }}>
      {left > 0 ? (
        <>
          in{' '}
          <span role="timer" style={{ fontVariantNumeric: 'tabular-nums' }}>
            {countdown}
          </span>{' '}
        </>
      ) : (
        `${passed} `
      )}
      (at{' '}
      <time dateTime={deadline} title={formatDateTime(deadline)}>
        {clock}
      </time>
      )
    </Text>
  );
}
