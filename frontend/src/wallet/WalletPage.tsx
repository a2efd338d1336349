import { Stack, Text, Title } from '@mantine/core';
import { useMyWallet } from '../api/hooks/wallets';
import { QueryState } from '../ui/QueryState';
import { MonthUsageText } from './MonthUsageText';
import { RunwayText } from './RunwayText';
import { WalletView } from './WalletView';

export function WalletPage() {
  const wallet = useMyWallet();
  return (
    <Stack maw={1100} gap="lg">
      <div>
        <Title order={2}>Your wallet</Title>
        <Text size="sm" c="dimmed">
          Credits pay for the GPU time you use. Your group admins allocate them to you.
        </Text>
        <RunwayText mt="xs" fw={500} />
        <MonthUsageText mt={4} />
      </div>
      <QueryState query={wallet}>
        {wallet.data && <WalletView wallet={wallet.data} />}
      </QueryState>
    </Stack>
  );
}
