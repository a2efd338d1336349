import { Loader, Stack } from '@mantine/core';
import { lazy, Suspense } from 'react';
import { useWalletConsumption } from '../api/hooks/wallets';
import type { WalletOut } from '../api/types';
import { QueryState } from '../ui/QueryState';
import { WalletAlertCard } from './WalletAlertCard';
import { WalletHistory } from './WalletHistory';
import { WalletSummary } from './WalletSummary';

// The charting library is large and only wallet pages draw charts: it loads with them.
const ConsumptionChart = lazy(() => import('./ConsumptionChart').then((module) => ({ default: module.ConsumptionChart })));

/** Figures, usage chart and history of one wallet. */
export function WalletView({ wallet }: { wallet: WalletOut }) {
  const consumption = useWalletConsumption(wallet.id);
  return (
    <Stack gap="xl">
      <WalletSummary wallet={wallet} />
      <WalletAlertCard walletId={wallet.id} personal={wallet.owner_kind === 'user'} />
      <QueryState query={consumption}>
        <Suspense fallback={<Loader size="sm" aria-label="Loading the chart" />}>
          {consumption.data && <ConsumptionChart days={consumption.data.days} />}
        </Suspense>
      </QueryState>
      <WalletHistory walletId={wallet.id} />
    </Stack>
  );
}
