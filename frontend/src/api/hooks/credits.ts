import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../client';
import { idempotencyHeaders, retryIdempotent, type Idempotent } from '../idempotency';
import { queries, scopes } from '../keys';
import type { MintRequest, TransferRequest } from '../types';

/** New credits into an organization's wallet (super admin). */
export function useMint() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ body, idempotencyKey }: Idempotent<MintRequest>) =>
      unwrap(api.POST('/api/v1/credits/mint', { body, headers: idempotencyHeaders(idempotencyKey) })),
    retry: retryIdempotent,
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.wallets }),
  });
}

/** Credits between a wallet and its direct parent or child. */
export function useTransfer() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ body, idempotencyKey }: Idempotent<TransferRequest>) =>
      unwrap(api.POST('/api/v1/credits/transfers', { body, headers: idempotencyHeaders(idempotencyKey) })),
    retry: retryIdempotent,
    onSuccess: () => client.invalidateQueries({ queryKey: scopes.wallets }),
  });
}

/** The ledger's self-check (super admin); runs only when asked for. */
export function useLedgerCheck() {
  return useQuery(queries.ledgerCheck());
}
