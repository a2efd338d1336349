import '@mantine/charts/styles.css';
import { BarChart } from '@mantine/charts';
import { Box, Group, Paper, Text, VisuallyHidden } from '@mantine/core';
import type { ConsumptionDayOut } from '../api/types';
import { formatAmount, formatCredits, fromMicros, sumAmounts, toMicros } from '../ui/amount';
import { formatDay } from '../ui/format';

const HEIGHT = 140;

/**
 * Credits used per day as a bar chart. Screen readers get the exact numbers from a visually
 * hidden table; the drawing itself is one labelled image. Bar heights are floating point,
 * which only draws them: every figure shown as text comes from the server's decimal strings.
 */
export function ConsumptionChart({ days }: { days: ConsumptionDayOut[] }) {
  const micros = days.map((day) => toMicros(day.amount));
  const used = micros.some((value) => value > 0n);
  const total = sumAmounts(days.map((day) => day.amount));
  const from = formatDay(days[0]?.day ?? '');
  const to = formatDay(days[days.length - 1]?.day ?? '');
  const data = days.map((day, index) => ({ day: formatDay(day.day), credits: Number(micros[index]) / 1e6 }));

  return (
    <Paper withBorder p="md" radius="md">
      <Group justify="space-between" align="baseline" mb="sm">
        <Text fw={600}>Usage per day</Text>
        <Text size="sm" c="dimmed">
          {formatCredits(total)} in the last {days.length} days
        </Text>
      </Group>
      {!used ? (
        <Text size="sm" c="dimmed">
          No credits used in the last {days.length} days.
        </Text>
      ) : (
        <>
          <Box role="img" aria-label={`Credits used per day from ${from} to ${to}; the table below lists each day.`}>
            <BarChart
              h={HEIGHT}
              data={data}
              dataKey="day"
              series={[{ name: 'credits', label: 'Credits used', color: 'blue.6' }]}
              valueFormatter={(value) => formatCredits(fromMicros(BigInt(Math.round(value * 1e6))))}
              gridAxis="none"
              withYAxis={false}
              tickLine="none"
              // A picture of the table below: nothing in it takes the keyboard's focus.
              barChartProps={{ accessibilityLayer: false }}
              aria-hidden
            />
          </Box>
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
