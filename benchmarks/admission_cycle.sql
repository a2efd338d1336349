-- One admission cycle, as the service layer issues it (see capacity/admission.py and
-- credits/operations.py), for pgbench: admit a 1/8 session in one transaction, release it in
-- another. Each pgbench client plays one member with a GPU model of its own (as each client of
-- the service side does), so the card placement picks is that model's first card, slot 0.
-- The first SELECT stands for what the service keeps in Python (the ids it was asked with, the
-- placement decision) and draws the new rows' ids. The statements are the service's own, in its
-- order (capacity/repository.py, credits/repository.py); keep the two in step.
SELECT user_id, user_key, group_id, org_id, tier_id, model_id, model, cluster_id, card_id,
       user_wallet, group_wallet, gen_random_uuid() AS rid, gen_random_uuid() AS aid,
       gen_random_uuid() AS hid
  FROM bench_clients WHERE n = :client_id \gset
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('gshare.capacity.user'), hashtext(:user_key));
SELECT 1 FROM admission_requests WHERE id = :rid::uuid;
SELECT g.org_id FROM groups g JOIN memberships m ON m.group_id = g.id
  WHERE g.id = :group_id::uuid AND m.user_id = :user_id::uuid
  AND (m.expires_at IS NULL OR m.expires_at > now());
WITH held AS (SELECT count(*) FILTER (WHERE card_id IS NOT NULL) AS held_sessions,
  coalesce(sum(vram_mib) FILTER (WHERE card_id IS NOT NULL), 0) AS held_vram,
  coalesce(sum(cpu_millicores), 0) AS held_millicores, coalesce(sum(memory_mib), 0) AS held_memory
  FROM gpu_allocations WHERE user_id = :user_id::uuid AND status IN ('live', 'lost')),
layers AS (SELECT coalesce(jsonb_agg(jsonb_build_array(scope_kind, scope_id, values)),
  '[]'::jsonb) AS layers FROM resource_policies
  WHERE (scope_kind = 'global' AND scope_id IS NULL)
  OR (scope_kind = 'organization' AND scope_id = :org_id::uuid)
  OR (scope_kind = 'group' AND scope_id = :group_id::uuid)
  OR (scope_kind = 'user' AND scope_id = :user_id::uuid)),
queue AS (SELECT coalesce(bool_or(tier_id = :tier_id::uuid), false) AS tier_waiting,
  array_agg(reserved_card_id) FILTER (WHERE reserved_card_id IS NOT NULL) AS reserved_cards,
  array_agg(id) FILTER (WHERE reserved_card_id IS NOT NULL) AS reserved_for,
  (SELECT array_agg(h.card_id ORDER BY h.card_id) FROM (SELECT DISTINCT n.card_id, n.booking_id FROM capacity_notices n
    JOIN capacity_bookings b ON b.id = n.booking_id AND b.status = 'active'
    AND (n.deadline = b.starts_at OR (b.weekly_until IS NOT NULL AND n.deadline > b.starts_at
    AND n.deadline < b.weekly_until
    AND mod(CAST(extract(epoch FROM n.deadline - b.starts_at) AS numeric), 604800) = 0))
    WHERE n.booking_id IS NOT NULL AND n.card_id IS NOT NULL
    AND n.status IN ('pending', 'paused', 'freed')
    AND n.deadline > CAST(now() AS timestamptz) - interval '15 min'
    AND CAST(now() AS timestamptz) < n.deadline
    + make_interval(mins => least(b.notice_minutes, 15))) h) AS booked_cards,
  (SELECT array_agg(h.booking_id ORDER BY h.card_id) FROM (SELECT DISTINCT n.card_id, n.booking_id FROM capacity_notices n
    JOIN capacity_bookings b ON b.id = n.booking_id AND b.status = 'active'
    AND (n.deadline = b.starts_at OR (b.weekly_until IS NOT NULL AND n.deadline > b.starts_at
    AND n.deadline < b.weekly_until
    AND mod(CAST(extract(epoch FROM n.deadline - b.starts_at) AS numeric), 604800) = 0))
    WHERE n.booking_id IS NOT NULL AND n.card_id IS NOT NULL
    AND n.status IN ('pending', 'paused', 'freed')
    AND n.deadline > CAST(now() AS timestamptz) - interval '15 min'
    AND CAST(now() AS timestamptz) < n.deadline
    + make_interval(mins => least(b.notice_minutes, 15))) h) AS booked_for
  FROM admission_requests WHERE status = 'queued')
SELECT held.*, layers.layers, t.id, t.model_id, t.name, t.kind, t.denominator, t.mig_profile,
  t.vram_mib, t.compute_percent, t.price, t.price_is_default, t.created_at, t.retired_at,
  m.name AS model_name, m.memory_mib AS model_memory_mib, m.split_count AS model_split_count,
  m.exclusive_price AS model_exclusive_price, m.created_at AS model_created_at, queue.*
  FROM held, queue, layers
  LEFT JOIN (gpu_tiers t JOIN gpu_models m ON m.id = t.model_id) ON t.id = :tier_id::uuid;
SELECT kind, id, balance - held, closed_at FROM credit_accounts
  WHERE (kind = 'user' AND owner_id = :user_id::uuid)
  OR (kind = 'group' AND owner_id = :group_id::uuid);
SELECT id FROM clusters WHERE status = 'connected';
SELECT c.id, c.cluster_id, c.node, c.model, c.memory_mib, c.split_count, c.pool,
  c.healthy, c.missing, c.carved_tier_id, c.carved_slots, c.mig_layout,
  (SELECT array_agg(a.slot) FROM gpu_allocations a
   WHERE a.live_card_id = c.id AND a.status IN ('live', 'lost')) AS taken
  FROM gpu_cards c WHERE c.cluster_id = ANY(ARRAY[:cluster_id::uuid])
  AND c.model = ANY(ARRAY[:model]) AND c.healthy AND NOT c.missing AND NOT
  EXISTS (SELECT 1 FROM capacity_drains d WHERE d.status = 'active'
   AND d.cluster_id = c.cluster_id AND (d.scope = 'cluster'
   OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id))
  ORDER BY c.id;
SELECT id FROM gpu_cards WHERE id = :card_id::uuid FOR UPDATE;
SELECT c.id, c.cluster_id, c.node, c.model, c.memory_mib, c.split_count, c.pool,
  c.healthy, c.missing, c.carved_tier_id, c.carved_slots, c.mig_layout,
  (SELECT array_agg(a.slot) FROM gpu_allocations a
   WHERE a.live_card_id = c.id AND a.status IN ('live', 'lost')) AS taken,
  EXISTS (SELECT 1 FROM capacity_drains d WHERE d.status = 'active'
   AND d.cluster_id = c.cluster_id AND (d.scope = 'cluster'
   OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id)) AS draining
  FROM gpu_cards c WHERE c.id = :card_id::uuid;
SELECT id, kind, owner_id, balance, held, closed_at IS NOT NULL AS closed FROM credit_accounts
  WHERE id = ANY(ARRAY[:user_wallet::uuid]) ORDER BY id FOR UPDATE \gset w_
WITH w AS (UPDATE credit_accounts AS a SET balance = v.balance, held = v.held
  FROM unnest(ARRAY[:user_wallet::uuid], ARRAY[:w_balance::bigint],
              ARRAY[:w_held::bigint + 1000000]) AS v(id, balance, held)
  WHERE a.id = v.id RETURNING a.id),
ev AS (INSERT INTO events (kind, user_id, group_id, org_id, private, everyone, data)
  SELECT * FROM unnest(ARRAY['wallet.changed']::varchar[], ARRAY[:user_id::uuid],
    ARRAY[NULL]::uuid[], ARRAY[NULL]::uuid[], ARRAY[false], ARRAY[false],
    ARRAY[json_build_object('wallet_id', :user_wallet::text, 'owner_kind', 'user',
      'owner_id', :user_id::text, 'balance', :w_balance::text,
      'held', (:w_held::bigint + 1000000)::text)::jsonb]) RETURNING 1)
INSERT INTO credit_holds (id, account_id, session_id, rate_per_hour, window_seconds,
  for_group_wallet_id, reserved, captured, status, created_at, resolved_at)
  VALUES (:hid::uuid, :user_wallet::uuid, :rid::uuid, 1000000, 3600, :group_wallet::uuid,
          1000000, 0, 'open', now(), NULL);
WITH carved AS (
  UPDATE gpu_cards SET carved_tier_id = :tier_id::uuid, carved_slots = 8
  WHERE id = :card_id::uuid AND true RETURNING id),
request AS (
  INSERT INTO admission_requests (id, user_id, group_id, tier_id, model, tier_name,
  cpu_millicores, memory_mib, cluster_id, session_id, status, reason, enqueued_at, decided_at)
  SELECT :rid::uuid, :user_id::uuid, :group_id::uuid, :tier_id::uuid, :model, '1/8', 1000, 2048,
  NULL, NULL, 'admitted', '', now(), now() WHERE true RETURNING id),
allocation AS (
  INSERT INTO gpu_allocations (id, request_id, user_id, group_id, cluster_id, card_id,
  tier_id, model, tier_name, slot, mig_profile, vram_mib, compute_percent, cpu_millicores,
  memory_mib, price_per_hour, hold_id, status, live_card_id, live_tier_id, live_slots,
  admitted_at)
  VALUES (:aid::uuid, :rid::uuid, :user_id::uuid, :group_id::uuid, :cluster_id::uuid,
          :card_id::uuid, :tier_id::uuid, :model, '1/8', 0, NULL, 10240, 12, 1000, 2048,
          1000000, :hid::uuid, 'live', :card_id::uuid, :tier_id::uuid, 8, now()) RETURNING id),
ev AS (INSERT INTO events (kind, user_id, group_id, org_id, private, everyone, data)
  SELECT * FROM unnest(ARRAY['admission.changed']::varchar[], ARRAY[:user_id::uuid],
    ARRAY[:group_id::uuid], ARRAY[NULL]::uuid[], ARRAY[false], ARRAY[false],
    ARRAY[json_build_object('request_id', :rid::text, 'state', 'admitted')::jsonb]) RETURNING 1)
INSERT INTO fair_share_usage (subject_kind, subject_id, usage, sampled_at)
  SELECT kind, subject, 0.0003, 'epoch'
  FROM (VALUES ('user', :user_id::uuid), ('group', :group_id::uuid)) AS s(kind, subject)
  WHERE 0.0003 > 0
  ON CONFLICT (subject_kind, subject_id) DO UPDATE SET usage = fair_share_usage.usage + excluded.usage;
COMMIT;
BEGIN;
WITH released AS (
  UPDATE gpu_allocations a SET status = 'released', released_at = now(),
  release_reason = 'stopped', live_card_id = NULL, live_tier_id = NULL, live_slots = NULL
  FROM (SELECT id, live_card_id FROM gpu_allocations WHERE request_id = :rid::uuid
        AND status IN ('live', 'lost') FOR UPDATE) held
  WHERE a.id = held.id RETURNING a.*, held.live_card_id AS held_card_id),
locked AS (SELECT c.id FROM gpu_cards c JOIN released r ON c.id = r.held_card_id FOR UPDATE OF c)
SELECT released.* FROM released LEFT JOIN locked ON locked.id = released.held_card_id;
WITH cleared AS (
  UPDATE gpu_cards SET carved_tier_id = NULL, carved_slots = NULL WHERE id = :card_id::uuid
  AND NOT EXISTS (SELECT 1 FROM gpu_allocations WHERE live_card_id = :card_id::uuid
                  AND live_tier_id IS NOT NULL)),
ev AS (INSERT INTO events (kind, user_id, group_id, org_id, private, everyone, data)
  SELECT * FROM unnest(ARRAY['admission.changed']::varchar[], ARRAY[:user_id::uuid],
    ARRAY[:group_id::uuid], ARRAY[NULL]::uuid[], ARRAY[false], ARRAY[false],
    ARRAY[json_build_object('request_id', :rid::text, 'state', 'ended')::jsonb]) RETURNING 1)
SELECT pg_notify('gshare_capacity', 'release ' || :card_id);
SELECT h.id, h.account_id, h.session_id, h.rate_per_hour, h.window_seconds,
  h.for_group_wallet_id, h.reserved, h.captured, h.status, h.created_at, h.resolved_at,
  a.kind AS wallet_kind, a.owner_id AS wallet_owner_id, a.balance AS balance,
  a.held AS held, a.closed_at IS NOT NULL AS wallet_closed
  FROM credit_holds h JOIN credit_accounts a ON a.id = h.account_id
  WHERE h.id = :hid::uuid FOR UPDATE OF h, a \gset w_
WITH w AS (UPDATE credit_accounts AS a SET balance = v.balance, held = v.held
  FROM unnest(ARRAY[:user_wallet::uuid], ARRAY[:w_balance::bigint],
              ARRAY[:w_held::bigint - 1000000]) AS v(id, balance, held)
  WHERE a.id = v.id RETURNING a.id),
ev AS (INSERT INTO events (kind, user_id, group_id, org_id, private, everyone, data)
  SELECT * FROM unnest(ARRAY['wallet.changed']::varchar[], ARRAY[:user_id::uuid],
    ARRAY[NULL]::uuid[], ARRAY[NULL]::uuid[], ARRAY[false], ARRAY[false],
    ARRAY[json_build_object('wallet_id', :user_wallet::text, 'owner_kind', 'user',
      'owner_id', :user_id::text, 'balance', :w_balance::text,
      'held', (:w_held::bigint - 1000000)::text)::jsonb]) RETURNING 1),
r AS (INSERT INTO credit_hold_resolutions (hold_id, kind, captured, released, at)
  VALUES (:hid::uuid, 'released', 0, 1000000, now()) RETURNING 1)
UPDATE credit_holds SET reserved = 0, captured = 0, status = 'released', resolved_at = now()
  WHERE id = :hid::uuid;
COMMIT;
