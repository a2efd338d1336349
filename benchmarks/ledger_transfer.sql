-- One ledger transfer, as the service layer issues it (see credits/repository.py), for pgbench.
-- {pairs} is replaced with the number of (group, member) pairs in bench_pairs.
\set n random(1, {pairs})
\set a random(1, 9223372036854775807)
\set b random(1, 9223372036854775807)
BEGIN;
SELECT src, dst FROM bench_pairs WHERE n = :n \gset
SELECT id, kind, owner_id, balance, held FROM credit_accounts
  WHERE id = ANY(ARRAY[:src, :dst]::uuid[]) ORDER BY id FOR UPDATE;
UPDATE credit_accounts SET balance = balance - 1, held = held WHERE id = :src;
UPDATE credit_accounts SET balance = balance + 1, held = held WHERE id = :dst;
INSERT INTO credit_transfers
  (id, kind, debit_account_id, credit_account_id, amount, memo, actor_id, hold_id, created_at)
  VALUES ((lpad(to_hex(:a::bigint), 16, '0') || lpad(to_hex(:b::bigint), 16, '0'))::uuid,
          'allocation', :src, :dst, 1, NULL, NULL, NULL, now());
INSERT INTO credit_entries (transfer_id, account_id, amount, balance_after, created_at)
  VALUES ((lpad(to_hex(:a::bigint), 16, '0') || lpad(to_hex(:b::bigint), 16, '0'))::uuid,
          :src, -1, NULL, now()),
         ((lpad(to_hex(:a::bigint), 16, '0') || lpad(to_hex(:b::bigint), 16, '0'))::uuid,
          :dst, 1, NULL, now());
COMMIT;
