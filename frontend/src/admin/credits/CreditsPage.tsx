import { Button, Stack } from '@mantine/core';
import { useState } from 'react';
import { useLedgerCheck, useMint, useTransfer } from '../../api/hooks/credits';
import { useSetMonthlyGrant, useWalletTree } from '../../api/hooks/wallets';
import type { WalletOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { QueryState } from '../../ui/QueryState';
import { OrgPicker } from '../OrgPicker';
import { notifyDone } from '../../ui/notify';
import { PageHeader } from '../../ui/PageHeader';
import { CreditActionModal, type CreditAction } from './CreditActionModal';
import { allocateAction, mintAction, monthlyGrantAction, takeBackAction } from './creditActions';
import { LedgerCheckResult } from './LedgerCheck';
import { WalletTree, type WalletActionKind } from './WalletTree';

function OrgWallets({ orgId, onAction }: { orgId: string; onAction: (action: CreditAction) => void }) {
  const { can } = useSession();
  const tree = useWalletTree(orgId);
  const transfer = useTransfer();
  const mint = useMint();
  const setGrant = useSetMonthlyGrant();

  const open = (kind: WalletActionKind, wallet: WalletOut, parent: WalletOut | null) => {
    if (kind === 'mint') onAction(mintAction(orgId, wallet, mint.mutateAsync));
    else if (kind === 'grant') onAction(monthlyGrantAction(wallet, parent, setGrant.mutateAsync));
    else if (parent && kind === 'allocate') onAction(allocateAction(parent, wallet, transfer.mutateAsync));
    else if (parent && kind === 'take-back') onAction(takeBackAction(wallet, parent, transfer.mutateAsync));
  };

  const data = tree.data;
  return (
    <QueryState
      query={tree}
      isEmpty={!data || (data.org === null && data.groups.length === 0)}
      empty="No wallets to show in this organization."
    >
      {data && (
        <WalletTree
          tree={data}
          actions={{
            canMint: can('credits.mint', { orgId }),
            canSetOrgGrant: can('credits.grant_org', { orgId }),
            canMoveGroup: can('credits.move_org_group', { orgId }),
            canSetGroupGrant: can('credits.grant_group', { orgId }),
            canMoveMember: (groupId) => can('credits.move_group_user', { orgId, groupId }),
            canSetMemberGrant: (groupId) => can('credits.grant_user', { orgId, groupId }),
            onAction: open,
          }}
        />
      )}
    </QueryState>
  );
}

export function CreditsPage() {
  const { can } = useSession();
  const check = useLedgerCheck();
  const [action, setAction] = useState<CreditAction | null>(null);

  const openAction = (next: CreditAction) => setAction(next);

  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Credits"
        description="Credits flow from an organization to its groups and from each group to its members."
        actions={
          can('credits.check') && (
            <Button variant="default" onClick={() => void check.refetch()} loading={check.isFetching}>
              Check ledger
            </Button>
          )
        }
      />
      {can('credits.check') && <LedgerCheckResult check={check} />}
      <OrgPicker empty="There are no organizations whose credits you can manage.">
        {(org) => <OrgWallets key={org.id} orgId={org.id} onAction={openAction} />}
      </OrgPicker>
      <CreditActionModal action={action} onClose={() => setAction(null)} onDone={notifyDone} />
    </Stack>
  );
}
