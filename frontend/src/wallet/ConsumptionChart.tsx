import { Group, Paper, Text, VisuallyHidden } from '@mantine/core';
import type { ConsumptionDayOut } from '../api/types';
import { formatAmount, formatCredits, sumAmounts, toMicros } from '../ui/amount';
import { formatDay } from '../ui/format';

const HEIGHT = 120;
const BAR = 10;
const GAP = 3;

/**
 * Credits used per day as plain SVG bars. Screen readers get the same numbers
 * from a visually hidden table; the drawing itself is one labelled image.
 */
export function ConsumptionChart({ days }: { days: ConsumptionDayOut[] }) {
  const micros = days.map((day) => toMicros(day.amount));
  const max = micros.reduce((top, value) => (value > top ? value : top), 0n);
  const total = sumAmounts(days.map((day) => day.amount));
  const width = Math.max(days.length * (BAR + GAP) - GAP, 1);
  const first = days[0]?.day;
  const last = days[days.length - 1]?.day;

  return (
    <Paper withBorder p="md" radius="md">
      <Group justify="space-between" align="baseline" mb="sm">
        <Text fw={600}>Usage per day</Text>
        <Text size="sm" c="dimmed">
          {formatCredits(total)} in the last {days.length} days
        </Text>
      </Group>
      {max === 0n ? (
        <Text size="sm" c="dimmed">
          No credits used in the last {days.length} days.
        </Text>
      ) : (
        <>
          <svg
            role="img"
            aria-label={`Credits used per day from ${formatDay(first ?? '')} to ${formatDay(last ?? '')}; the table below lists each day.`}
            viewBox={`0 0 ${width} ${HEIGHT}`}
            preserveAspectRatio="none"
            width="100%"
            height={HEIGHT}
            style={{ display: 'block' }}
          >
            <line x1={0} x2={width} y1={HEIGHT - 0.5} y2={HEIGHT - 0.5} stroke="var(--mantine-color-gray-4)" strokeWidth={1} />
            {days.map((day, index) => {
              // Tenths of a percent of the busiest day, exact in BigInt; a used day stays visible.
              const permille = Number((micros[index] * 1000n) / max);
              const height = micros[index] > 0n ? Math.max((permille / 1000) * (HEIGHT - 2), 2) : 0;
              return (
                <rect
                  key={day.day}
                  x={index * (BAR + GAP)}
                  y={HEIGHT - 1 - height}
                  width={BAR}
                  height={height}
                  rx={1.5}
                  fill="var(--mantine-color-blue-6)"
                >
                  <title>{`${formatDay(day.day)}: ${formatCredits(day.amount)}`}</title>
                </rect>
              );
            })}
          </svg>
          <Group justify="space-between" mt={4} aria-hidden>
            <Text size="xs" c="dimmed">
              {formatDay(first ?? '')}
            </Text>
            <Text size="xs" c="dimmed">
              {formatDay(last ?? '')}
            </Text>
          </Group>
          <VisuallyHidden>
            <table>
              <caption>Credits used per day</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Credits used</th>
                </tr>
              </thead>
              <tbody>
                {days.map((day) => (
                  <tr key={day.day}>
                    <td>{formatDay(day.day, { year: 'numeric', month: 'long', day: 'numeric' })}</td>
                    <td>{formatAmount(day.amount)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </VisuallyHidden>
        </>
      )}
    </Paper>
  );
}
