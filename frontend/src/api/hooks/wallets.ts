import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../client';
import type { EntryFilters } from '../filters';
import { idempotencyHeaders, retryIdempotent, type Idempotent } from '../idempotency';
import { queries, scopes } from '../keys';
import { usePaged } from '../paged';
import type { EntryOut, MonthlyGrantPut, WalletAlertRequest } from '../types';

export type { EntryFilters } from '../filters';

/** The signed-in user's own wallet. */
export function useMyWallet() {
  return useQuery(queries.myWallet());
}

export function useWallet(walletId: string) {
  return useQuery(queries.wallet(walletId));
}

/** A wallet's history, newest first. */
export function useWalletEntries(walletId: string | undefined, filters: EntryFilters = {}) {
  return usePaged<EntryOut>(queries.walletEntries(walletId ?? '', filters), Boolean(walletId));
}

export const CONSUMPTION_DAYS = 30;

/** Credits used per day, oldest first, one element per day. */
export function useWalletConsumption(walletId: string | undefined, days = CONSUMPTION_DAYS) {
  return useQuery({ ...queries.walletConsumption(walletId ?? '', days), enabled: Boolean(walletId) });
}

/** The organization's wallet, its groups' wallets and their members' wallets. */
export function useWalletTree(orgId: string | null) {
  return useQuery({ ...queries.walletTree(orgId ?? ''), enabled: Boolean(orgId) });
}

export function useSetMonthlyGrant() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ walletId, body, idempotencyKey }: Idempotent<MonthlyGrantPut> & { walletId: string }) =>
      unwrap(
        api.PUT('/api/v1/wallets/{wallet_id}/monthly-grant', {
          params: { path: { wallet_id: walletId } },
          body,
          headers: idempotencyHeaders(idempotencyKey),
        }),
      ),
    retry: retryIdempotent,
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.wallets }),
  });
}

/** A wallet's low-credit alert, and its runway at the rate billed now. */
export function useWalletAlert(walletId: string | undefined) {
  return useQuery({ ...queries.walletAlert(walletId ?? ''), enabled: Boolean(walletId) });
}

/** Set, replace or (both thresholds null) remove a wallet's alert. */
export function useSetWalletAlert() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ walletId, body }: { walletId: string; body: WalletAlertRequest }) =>
      unwrap(api.PUT('/api/v1/wallets/{wallet_id}/alert', { params: { path: { wallet_id: walletId } }, body })),
    onSuccess: (_, { walletId }) => client.invalidateQueries({ queryKey: queries.walletAlert(walletId).queryKey }),
  });
}
