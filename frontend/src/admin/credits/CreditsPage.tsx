import { Alert, Button, Stack } from '@mantine/core';
import { useState } from 'react';
import { useLedgerCheck, useMint, useTransfer } from '../../api/hooks/credits';
import { useSetMonthlyGrant, useWalletTree } from '../../api/hooks/wallets';
import type { WalletOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ListState } from '../../ui/ListState';
import { OrgPicker } from '../OrgPicker';
import { PageHeader } from '../PageHeader';
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
    <ListState
      isPending={tree.isPending}
      error={tree.error}
      isEmpty={!data || (data.org === null && data.groups.length === 0)}
      empty="No wallets to show in this organization."
      onRetry={() => void tree.refetch()}
    >
      {data && (
        <WalletTree
          tree={data}
          actions={{
            canMint: can.canMintCredits,
            canSetOrgGrant: can.canSetOrgGrant,
            canMoveGroup: can.canMoveGroupCredits(orgId),
            canSetGroupGrant: can.canSetGroupGrant(orgId),
            canMoveMember: (groupId) => can.canMoveMemberCredits(orgId, groupId),
            canSetMemberGrant: (groupId) => can.canSetMemberGrant(orgId, groupId),
            onAction: open,
          }}
        />
      )}
    </ListState>
  );
}

export function CreditsPage() {
  const { can } = useSession();
  const check = useLedgerCheck();
  const [action, setAction] = useState<CreditAction | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const openAction = (next: CreditAction) => {
    setNotice(null);
    setAction(next);
  };

  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Credits"
        description="Credits flow from an organization to its groups and from each group to its members."
        actions={
          can.canCheckLedger && (
            <Button variant="default" onClick={() => void check.refetch()} loading={check.isFetching}>
              Check ledger
            </Button>
          )
        }
      />
      {can.canCheckLedger && <LedgerCheckResult check={check} />}
      {notice && (
        <Alert color="green" role="status" withCloseButton onClose={() => setNotice(null)} closeButtonLabel="Dismiss">
          {notice}
        </Alert>
      )}
      <OrgPicker empty="There are no organizations whose credits you can manage.">
        {(org) => <OrgWallets key={org.id} orgId={org.id} onAction={openAction} />}
      </OrgPicker>
      <CreditActionModal action={action} onClose={() => setAction(null)} onDone={setNotice} />
    </Stack>
  );
}
