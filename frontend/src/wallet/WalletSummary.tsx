import { Paper, SimpleGrid, Stack, Text } from '@mantine/core';
import type { MonthlyGrantOut, WalletOut } from '../api/types';
import { Amount } from '../ui/Amount';
import { formatCredits, isZero } from '../ui/amount';
import { formatDateTime, formatPeriod } from '../ui/format';

function Figure({ label, value, hint, large = false }: { label: string; value: string; hint: string; large?: boolean }) {
  return (
    <Paper withBorder p="md" radius="md" role="group" aria-label={label}>
      <Text size="sm" c="dimmed">
        {label}
      </Text>
      <Text fz={large ? 36 : 24} fw={700} lh={1.2} style={{ fontVariantNumeric: 'tabular-nums' }}>
        <Amount value={value} />
      </Text>
      <Text size="xs" c="dimmed" mt={4}>
        {hint}
      </Text>
    </Paper>
  );
}

export function MonthlyGrantText({ grant }: { grant: MonthlyGrantOut | null }) {
  if (!grant || isZero(grant.amount)) {
    return (
      <Text size="sm" c="dimmed">
        No monthly grant.
      </Text>
    );
  }
  const refill = grant.last_refill;
  return (
    <Stack gap={4}>
      <Text size="sm">{formatCredits(grant.amount)} at the start of each month.</Text>
      {refill ? (
        <Text size="sm" c="dimmed">
          Last refill: {formatCredits(refill.amount)} for {formatPeriod(refill.period)}, on {formatDateTime(refill.at)}.
        </Text>
      ) : (
        <Text size="sm" c="dimmed">
          No refill yet.
        </Text>
      )}
      {refill && !isZero(refill.shortfall) && (
        <Text size="sm" c="orange">
          {formatCredits(refill.shortfall)} short: the paying wallet did not hold enough.
        </Text>
      )}
    </Stack>
  );
}

/** Available, held and balance, with the monthly grant. */
export function WalletSummary({ wallet }: { wallet: WalletOut }) {
  return (
    <Stack gap="md">
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Figure label="Available" value={wallet.available} hint="Credits you can spend now." large />
        <Figure label="Held" value={wallet.held} hint="Reserved for work that is running." />
        <Figure label="Balance" value={wallet.balance} hint="Available and held together." />
      </SimpleGrid>
      <Paper withBorder p="md" radius="md" role="group" aria-label="Monthly grant">
        <Text size="sm" c="dimmed" mb={4}>
          Monthly grant
        </Text>
        <MonthlyGrantText grant={wallet.monthly_grant} />
      </Paper>
    </Stack>
  );
}
