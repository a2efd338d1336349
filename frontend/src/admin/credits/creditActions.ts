import type { Idempotent } from '../../api/idempotency';
import type { MintRequest, MonthlyGrantPut, TransferRequest, WalletOut } from '../../api/types';
import { formatCredits } from '../../ui/amount';
import type { CreditAction } from './CreditActionModal';

type Send<T> = (request: Idempotent<T>) => Promise<unknown>;

function transferAction(verb: string, past: string, from: WalletOut, to: WalletOut, send: Send<TransferRequest>): CreditAction {
  return {
    title: `${verb} credits`,
    summary: `From ${from.owner_name} to ${to.owner_name}.`,
    // The server refuses more than the source has available (409); say so before Confirm.
    source: { walletId: from.id, ownerName: from.owner_name, available: from.available },
    withMemo: true,
    question: (amount) => `${verb} ${formatCredits(amount)} from ${from.owner_name} to ${to.owner_name}?`,
    submit: (amount, memo, idempotencyKey) =>
      send({ body: { from_wallet_id: from.id, to_wallet_id: to.id, amount, memo }, idempotencyKey }),
    done: (amount) => `${past} ${formatCredits(amount)} from ${from.owner_name} to ${to.owner_name}.`,
  };
}

/** Parent to child. */
export function allocateAction(parent: WalletOut, child: WalletOut, send: Send<TransferRequest>): CreditAction {
  return transferAction('Allocate', 'Allocated', parent, child, send);
}

/** Child back to parent. */
export function takeBackAction(child: WalletOut, parent: WalletOut, send: Send<TransferRequest>): CreditAction {
  return transferAction('Take back', 'Took back', child, parent, send);
}

export function mintAction(orgId: string, org: WalletOut, send: Send<MintRequest>): CreditAction {
  return {
    title: 'Mint credits',
    summary: `New credits go into the wallet of ${org.owner_name}.`,
    withMemo: true,
    question: (amount) => `Mint ${formatCredits(amount)} into ${org.owner_name}?`,
    submit: (amount, memo, idempotencyKey) => send({ body: { org_id: orgId, amount, memo }, idempotencyKey }),
    done: (amount) => `Minted ${formatCredits(amount)} into ${org.owner_name}.`,
  };
}

/**
 * The monthly grant of a wallet. For a member, `funding` is the group wallet
 * that pays it; groups are paid by their organization, organizations by new credits.
 */
export function monthlyGrantAction(
  wallet: WalletOut,
  funding: WalletOut | null,
  send: (request: Idempotent<MonthlyGrantPut> & { walletId: string }) => Promise<unknown>,
): CreditAction {
  const payer = funding ? `, paid from ${funding.owner_name}` : '';
  return {
    title: 'Set monthly grant',
    summary: `Credits ${wallet.owner_name} receives at the start of each month${payer}. Enter 0 to remove the grant.`,
    initialAmount: wallet.monthly_grant?.amount ?? '',
    allowZero: true,
    question: (amount) =>
      amount === '0'
        ? `Remove the monthly grant of ${wallet.owner_name}?`
        : `Set the monthly grant of ${wallet.owner_name} to ${formatCredits(amount)}${payer}?`,
    submit: (amount, _memo, idempotencyKey) =>
      send({
        walletId: wallet.id,
        body: funding ? { amount, funding_wallet_id: funding.id } : { amount },
        idempotencyKey,
      }),
    done: (amount) =>
      amount === '0'
        ? `Removed the monthly grant of ${wallet.owner_name}.`
        : `The monthly grant of ${wallet.owner_name} is now ${formatCredits(amount)}.`,
  };
}
