-- One ledger transfer, as the service layer issues it (see credits/repository.py), for pgbench.
-- {pairs} is replaced with the number of (group, member) pairs in bench_pairs.
\set n random(1, {pairs})
\set a random(1, 9223372036854775807)
\set b random(1, 9223372036854775807)
BEGIN;
SELECT src, dst, funder FROM bench_pairs WHERE n = :n \gset
SELECT id, kind, owner_id, balance, held FROM credit_accounts
  WHERE id = ANY(ARRAY[:src, :dst]::uuid[]) ORDER BY id FOR UPDATE;
SELECT account_id, funder_id, amount, seq FROM credit_lots
  WHERE account_id = ANY(ARRAY[:src, :dst]::uuid[]);
WITH w AS (UPDATE credit_accounts AS a SET balance = a.balance + v.change, held = a.held
           FROM unnest(ARRAY[:src, :dst]::uuid[], ARRAY[-1, 1]::bigint[]) AS v(id, change)
           WHERE a.id = v.id RETURNING a.id),
d AS (SELECT * FROM unnest(ARRAY[:src, :dst]::uuid[], ARRAY[:funder, :src]::uuid[],
                           ARRAY[-1, 1]::bigint[]) AS d(account_id, funder_id, delta)),
up AS (UPDATE credit_lots l SET amount = l.amount + d.delta FROM d
       WHERE l.account_id = d.account_id AND l.funder_id = d.funder_id
       RETURNING l.account_id, l.funder_id),
ins AS (INSERT INTO credit_lots (account_id, funder_id, amount)
        SELECT d.account_id, d.funder_id, d.delta FROM d WHERE NOT EXISTS
        (SELECT 1 FROM up WHERE up.account_id = d.account_id AND up.funder_id = d.funder_id)
        RETURNING 1),
t AS (INSERT INTO credit_transfers
  (id, kind, debit_account_id, credit_account_id, amount, memo, actor_id, hold_id, created_at)
  VALUES ((lpad(to_hex(:a::bigint), 16, '0') || lpad(to_hex(:b::bigint), 16, '0'))::uuid,
          'allocation', :src, :dst, 1, NULL, NULL, NULL, now()) RETURNING id)
INSERT INTO credit_entries (transfer_id, account_id, amount, balance_after, created_at)
  SELECT t.id, v.account_id, v.amount, NULL, now() FROM t,
  (VALUES (:src::uuid, -1::bigint, 1), (:dst::uuid, 1::bigint, 2)) AS v(account_id, amount, side)
  ORDER BY v.side;
COMMIT;
