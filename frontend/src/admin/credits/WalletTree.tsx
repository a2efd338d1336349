import { Anchor, Badge, Button, Group, Table, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import type { WalletOut, WalletTreeOut } from '../../api/types';
import { Amount } from '../../ui/Amount';
import { formatAmount, formatCredits, isZero } from '../../ui/amount';
import { formatPeriod } from '../../ui/format';

export type WalletActionKind = 'mint' | 'allocate' | 'take-back' | 'grant';

/** What a row may offer; the page decides from the caller's roles. */
export interface WalletTreeActions {
  canMint: boolean;
  canSetOrgGrant: boolean;
  canMoveGroup: boolean;
  canSetGroupGrant: boolean;
  canMoveMember: (groupId: string) => boolean;
  canSetMemberGrant: (groupId: string) => boolean;
  /** `parent` is the wallet credits come from or go back to; for a member's grant, the paying group wallet. */
  onAction: (kind: WalletActionKind, wallet: WalletOut, parent: WalletOut | null) => void;
}

const LEVEL_LABELS: Record<WalletOut['owner_kind'], string> = { org: 'Organization', group: 'Group', user: 'Member' };
const INDENT: Record<WalletOut['owner_kind'], number> = { org: 0, group: 20, user: 40 };

function GrantCell({ wallet, payers }: { wallet: WalletOut; payers: Map<string, string> }) {
  const grant = wallet.monthly_grant;
  if (!grant || isZero(grant.amount)) return <>—</>;
  const refill = grant.last_refill;
  const payer = grant.funding_wallet_id ? payers.get(grant.funding_wallet_id) : undefined;
  return (
    <>
      <Text size="sm" style={{ whiteSpace: 'nowrap' }}>
        {formatAmount(grant.amount)} / month
      </Text>
      {payer && wallet.owner_kind === 'user' && (
        <Text size="xs" c="dimmed">
          from {payer}
        </Text>
      )}
      {refill && !isZero(refill.shortfall) && (
        <Badge
          variant="light"
          color="orange"
          title={`The ${formatPeriod(refill.period)} refill was ${formatCredits(refill.shortfall)} short.`}
        >
          {formatAmount(refill.shortfall)} short
        </Badge>
      )}
    </>
  );
}

function WalletRow({ wallet, payers, children }: { wallet: WalletOut; payers: Map<string, string>; children?: ReactNode }) {
  const figure = { ta: 'right' as const, style: { whiteSpace: 'nowrap' as const, fontVariantNumeric: 'tabular-nums' } };
  return (
    <Table.Tr>
      <Table.Td pl={`calc(var(--table-horizontal-spacing, 10px) + ${INDENT[wallet.owner_kind]}px)`}>
        <Anchor
          component={Link}
          to={`/admin/credits/wallets/${wallet.id}`}
          size="sm"
          fw={wallet.owner_kind === 'user' ? 400 : 600}
        >
          {wallet.owner_name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <Text size="sm" c="dimmed">
          {LEVEL_LABELS[wallet.owner_kind]}
        </Text>
      </Table.Td>
      <Table.Td {...figure}>
        <Amount value={wallet.balance} />
      </Table.Td>
      <Table.Td {...figure}>
        <Amount value={wallet.held} />
      </Table.Td>
      <Table.Td {...figure} fw={600}>
        <Amount value={wallet.available} />
      </Table.Td>
      <Table.Td>
        <GrantCell wallet={wallet} payers={payers} />
      </Table.Td>
      <Table.Td>
        <Group gap={6} justify="flex-end" wrap="nowrap">
          {children}
        </Group>
      </Table.Td>
    </Table.Tr>
  );
}

function ActionButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <Button size="compact-sm" variant="light" onClick={onClick}>
      {label}
    </Button>
  );
}

/** The organization's wallet, each group's wallet and each member's, as one indented table. */
export function WalletTree({ tree, actions }: { tree: WalletTreeOut; actions: WalletTreeActions }) {
  const org = tree.org;
  const payers = new Map(tree.groups.map((group) => [group.wallet.id, group.group_name]));
  const act = actions.onAction;

  return (
    <Table.ScrollContainer minWidth={900}>
      <Table verticalSpacing="xs" highlightOnHover aria-label="Wallets">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Wallet</Table.Th>
            <Table.Th>Type</Table.Th>
            <Table.Th ta="right">Balance</Table.Th>
            <Table.Th ta="right">Held</Table.Th>
            <Table.Th ta="right">Available</Table.Th>
            <Table.Th>Monthly grant</Table.Th>
            <Table.Th aria-label="Actions" />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {org && (
            <WalletRow wallet={org} payers={payers}>
              {actions.canMint && <ActionButton label="Mint" onClick={() => act('mint', org, null)} />}
              {actions.canSetOrgGrant && (
                <ActionButton label="Set monthly grant" onClick={() => act('grant', org, null)} />
              )}
            </WalletRow>
          )}
          {tree.groups.map((group) => {
            const groupWallet = group.wallet;
            const moveGroup = actions.canMoveGroup && org;
            const moveMember = actions.canMoveMember(group.group_id);
            const memberGrant = actions.canSetMemberGrant(group.group_id);
            return [
              <WalletRow key={groupWallet.id} wallet={groupWallet} payers={payers}>
                {moveGroup && (
                  <>
                    <ActionButton label="Allocate" onClick={() => act('allocate', groupWallet, org)} />
                    <ActionButton label="Take back" onClick={() => act('take-back', groupWallet, org)} />
                  </>
                )}
                {actions.canSetGroupGrant && (
                  <ActionButton label="Set monthly grant" onClick={() => act('grant', groupWallet, null)} />
                )}
              </WalletRow>,
              ...group.members.map((member) => (
                <WalletRow key={`${group.group_id}:${member.id}`} wallet={member} payers={payers}>
                  {moveMember && (
                    <>
                      <ActionButton label="Allocate" onClick={() => act('allocate', member, groupWallet)} />
                      <ActionButton label="Take back" onClick={() => act('take-back', member, groupWallet)} />
                    </>
                  )}
                  {memberGrant && (
                    <ActionButton label="Set monthly grant" onClick={() => act('grant', member, groupWallet)} />
                  )}
                </WalletRow>
              )),
              group.members.length === 0 && (
                <Table.Tr key={`${group.group_id}:empty`}>
                  <Table.Td colSpan={7} pl={`calc(var(--table-horizontal-spacing, 10px) + ${INDENT.user}px)`}>
                    <Text size="sm" c="dimmed">
                      No members in {group.group_name} yet.
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ),
            ];
          })}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
