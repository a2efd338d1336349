import { Anchor, Stack } from '@mantine/core';
import { Link, useParams } from 'react-router';
import { useWallet } from '../../api/hooks/wallets';
import { QueryState } from '../../ui/QueryState';
import { WalletView } from '../../wallet/WalletView';
import { PageHeader } from '../../ui/PageHeader';

const KIND_LABELS = { org: 'Organization wallet', group: 'Group wallet', user: 'Member wallet' } as const;

/** Any wallet the admin may read: figures, usage and history. */
export function WalletDetailPage() {
  const { walletId = '' } = useParams();
  const wallet = useWallet(walletId);
  return (
    <Stack maw={1100} gap="lg">
      <Anchor component={Link} to="/admin/credits" size="sm">
        ← Credits
      </Anchor>
      <QueryState query={wallet}>
        {wallet.data && (
          <Stack gap="lg">
            <PageHeader title={wallet.data.owner_name} description={KIND_LABELS[wallet.data.owner_kind]} />
            <WalletView wallet={wallet.data} />
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
