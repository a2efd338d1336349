import { Stack } from '@mantine/core';
import { useWalletConsumption } from '../api/hooks/wallets';
import type { WalletOut } from '../api/types';
import { ListState } from '../ui/ListState';
import { ConsumptionChart } from './ConsumptionChart';
import { WalletHistory } from './WalletHistory';
import { WalletSummary } from './WalletSummary';

/** Figures, usage chart and history of one wallet. */
export function WalletView({ wallet }: { wallet: WalletOut }) {
  const consumption = useWalletConsumption(wallet.id);
  return (
    <Stack gap="xl">
      <WalletSummary wallet={wallet} />
      <ListState
        isPending={consumption.isPending}
        error={consumption.error}
        isEmpty={false}
        empty={null}
        onRetry={() => void consumption.refetch()}
      >
        {consumption.data && <ConsumptionChart days={consumption.data.days} />}
      </ListState>
      <WalletHistory walletId={wallet.id} />
    </Stack>
  );
}
