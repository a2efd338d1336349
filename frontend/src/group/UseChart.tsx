import '@mantine/charts/styles.css';
import { LineChart } from '@mantine/charts';
import { Box } from '@mantine/core';
import type { GroupShareOut } from '../api/types';
import { timeAxis } from '../sessions/UsageCharts';
import { cards, hours } from './numbers';

/** The group's use over two half-lives: cards run, and the decayed usage the queue weighed. */
export function UseChart({ share }: { share: GroupShareOut }) {
  const points = share.history.map((p) => ({ t: new Date(p.at).getTime(), inUse: p.in_use, usage: p.usage }));
  if (points.length === 0) return null;
  const axis = timeAxis(share.history[0].at, share.history[points.length - 1].at);
  const mine = share.group.share;
  return (
    <Box
      role="img"
      aria-label={`${share.group.name}'s cards in use and recent use over the last ${hours(2 * share.half_life_seconds)}${
        mine === null ? '' : `, against its share of ${cards(mine)} cards`
      }`}
    >
      <LineChart
        h={200}
        data={points}
        dataKey="t"
        series={[
          { name: 'inUse', label: 'Cards in use', color: 'blue.6' },
          { name: 'usage', label: 'Recent use (what the queue weighs)', color: 'grape.6' },
        ]}
        curveType="linear"
        withDots={false}
        withLegend
        valueFormatter={cards}
        referenceLines={mine === null ? [] : [{ y: mine, label: `Share ${cards(mine)}`, color: 'teal.6' }]}
        {...axis}
      />
    </Box>
  );
}

