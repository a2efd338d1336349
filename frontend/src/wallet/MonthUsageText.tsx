import { Anchor, Text, type TextProps } from '@mantine/core';
import { Link } from 'react-router';
import { useUsage } from '../api/hooks/usage';
import type { UsageFiguresOut } from '../api/types';
import { useSession } from '../auth/session';
import { formatCredits, isZero } from '../ui/amount';
import { countOf } from '../ui/format';
import { monthStart } from '../usage/periods';
import { hours } from '../usage/report';

/** "This month: 41 GPU-hours, 6 of them idle (12 credits)." */
export function monthUsageWords(totals: UsageFiguresOut): string {
  if (totals.gpu_hours === 0 && isZero(totals.credits)) return 'No GPU use this month yet.';
  const idle = totals.idle_gpu_hours === 0 ? 'none' : hours.format(totals.idle_gpu_hours);
  return `This month: ${countOf(totals.gpu_hours, 'GPU-hour')}, ${idle} of them idle (${formatCredits(totals.credits)}).`;
}

/**
 * The signed-in user's own GPU use since the first of this UTC month, with a link to the Usage
 * page. Filtered to the user, so an admin sees their own use here, not what they administer.
 */
export function MonthUsageText(props: TextProps) {
  const { me } = useSession();
  const usage = useUsage({ since: monthStart(), by: 'none', every: 'none', user_id: me.user.id });
  if (usage.isPending) return null;
  return (
    <Text size="sm" {...props}>
      {usage.data ? monthUsageWords(usage.data.totals) : "This month's use could not be loaded."}{' '}
      <Anchor component={Link} to="/usage" size="sm">
        More on the Usage page
      </Anchor>
    </Text>
  );
}
