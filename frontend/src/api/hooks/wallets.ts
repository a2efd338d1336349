import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, compact, unwrap } from '../client';
import { idempotencyHeaders, retryIdempotent, type Idempotent } from '../idempotency';
import { keys } from '../keys';
import { PAGE_SIZE, usePaged } from '../paged';
import type { EntryKind, EntryOut, MonthlyGrantPut } from '../types';

/** The signed-in user's own wallet. */
export function useMyWallet() {
  return useQuery({
    queryKey: keys.myWallet,
    queryFn: () => unwrap(api.GET('/api/v1/wallets/me')),
  });
}

export function useWallet(walletId: string) {
  return useQuery({
    queryKey: keys.wallet(walletId),
    queryFn: () => unwrap(api.GET('/api/v1/wallets/{wallet_id}', { params: { path: { wallet_id: walletId } } })),
  });
}

export interface EntryFilters {
  kind?: EntryKind;
  since?: string;
  until?: string;
}

/** A wallet's history, newest first. */
export function useWalletEntries(walletId: string | undefined, filters: EntryFilters = {}) {
  const query = compact({ limit: PAGE_SIZE, ...filters });
  return usePaged<EntryOut>(
    [...keys.walletEntries(walletId ?? ''), query],
    (cursor) =>
      unwrap(
        api.GET('/api/v1/wallets/{wallet_id}/entries', {
          params: { path: { wallet_id: walletId ?? '' }, query: compact({ ...query, cursor }) },
        }),
      ),
    Boolean(walletId),
  );
}

export const CONSUMPTION_DAYS = 30;

/** Credits used per day, oldest first, one element per day. */
export function useWalletConsumption(walletId: string | undefined, days = CONSUMPTION_DAYS) {
  return useQuery({
    queryKey: keys.walletConsumption(walletId ?? '', days),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/wallets/{wallet_id}/consumption', {
          params: { path: { wallet_id: walletId ?? '' }, query: { days } },
        }),
      ),
    enabled: Boolean(walletId),
  });
}

/** The organization's wallet, its groups' wallets and their members' wallets. */
export function useWalletTree(orgId: string | null) {
  return useQuery({
    queryKey: keys.walletTree(orgId ?? ''),
    queryFn: () => unwrap(api.GET('/api/v1/orgs/{org_id}/wallet-tree', { params: { path: { org_id: orgId ?? '' } } })),
    enabled: Boolean(orgId),
  });
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
    onSuccess: () => client.invalidateQueries({ queryKey: keys.wallets }),
  });
}
