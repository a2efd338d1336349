import type { CardOut, EntryOut, MeOut, RoleGrantOut, WalletOut } from '../api/types';

type Capabilities = MeOut['capabilities'];

// What the server reports for each kind of role (tests/identity/test_capabilities.py checks
// the server's side); a test wanting something else passes `capabilities` itself.
const GROUP_ADMIN_ACTIONS = [
  'group.update',
  'group.admins.read',
  'group.members.manage',
  'user.create',
  'user.set_active',
  'user.reset_password',
  'credits.move_group_user',
  'credits.grant_user',
  'policy.read_group',
  'volume.manage_group',
  'booking.manage',
];
const ORG_ADMIN_ACTIONS = [
  ...GROUP_ADMIN_ACTIONS,
  'org.update',
  'org.admins.read',
  'org.admins.manage',
  'group.create',
  'group.delete',
  'group.admins.manage',
  'wallet.tree',
  'credits.move_org_group',
  'credits.grant_group',
  'policy.read_org',
  'policy.set_group',
  'policy.set_user',
  'isolation.audit',
];
export const SUPER_ADMIN_ACTIONS = [
  'admin_mode',
  'org.create',
  'org.delete',
  'audit.read',
  'credits.mint',
  'credits.check',
  'credits.grant_org',
  'clusters.manage',
  'capacity.read',
  'capacity.manage',
  'policy.read_global',
  'policy.set_global',
  'policy.set_org',
  'queue.read_scope',
  'session.read_scope',
  'catalog.manage',
  'worker.health',
  'isolation.manage',
  'user.super_admin.manage',
  ...ORG_ADMIN_ACTIONS,
];

/** The capabilities the server would send for these roles. */
export function capabilitiesFor(roles: RoleGrantOut[]): Capabilities {
  if (roles.some((r) => r.role === 'super_admin')) return { actions: SUPER_ADMIN_ACTIONS, orgs: [], groups: [] };
  const caps: Capabilities = {
    actions: roles.length
      ? ['admin_mode', 'audit.read', 'policy.read_global', 'queue.read_scope', 'session.read_scope']
      : [],
    orgs: [],
    groups: [],
  };
  for (const role of roles) {
    if (role.role === 'org_admin' && role.org_id) caps.orgs.push({ org_id: role.org_id, actions: ORG_ADMIN_ACTIONS });
    if (role.role === 'group_admin' && role.org_id && role.group_id) {
      caps.groups.push({ group_id: role.group_id, org_id: role.org_id, actions: GROUP_ADMIN_ACTIONS });
    }
  }
  return caps;
}

export function makeMe(overrides: Partial<MeOut> = {}, roles: RoleGrantOut[] = []): MeOut {
  return {
    user: {
      id: '00000000-0000-4000-8000-000000000001',
      email: 'ada@example.org',
      name: 'Ada Lovelace',
      active: true,
      must_change_password: false,
      is_super_admin: roles.some((r) => r.role === 'super_admin'),
      created_at: '2025-01-01T00:00:00Z',
    },
    roles,
    memberships: [],
    capabilities: capabilitiesFor(roles),
    csrf_token: 'csrf-from-me',
    must_change_password: false,
    ...overrides,
  };
}

export const SUPER_ADMIN: RoleGrantOut = {
  role: 'super_admin',
  org_id: null,
  group_id: null,
  org_name: null,
  group_name: null,
};

export const emptyPage = { items: [], next_cursor: null };

export function makeWallet(overrides: Partial<WalletOut> = {}): WalletOut {
  return {
    id: '00000000-0000-4000-8000-0000000000f1',
    owner_kind: 'user',
    owner_id: '00000000-0000-4000-8000-000000000001',
    owner_name: 'Ada Lovelace',
    balance: '0',
    held: '0',
    available: '0',
    monthly_grant: null,
    created_at: '2026-01-01T00:00:00Z',
    ...overrides,
  };
}

export function makeEntry(overrides: Partial<EntryOut> = {}): EntryOut {
  return {
    id: 1,
    transfer_id: '00000000-0000-4000-8000-0000000000e1',
    at: '2026-11-20T10:00:00Z',
    kind: 'allocation',
    amount: '10',
    balance_after: '10',
    counterparty_wallet_id: null,
    counterparty_name: null,
    memo: null,
    actor_email: null,
    hold_id: null,
    ...overrides,
  };
}

/** `count` days of consumption ending 2026-11-30, all zero unless given. */
export function makeConsumption(walletId: string, amounts: Record<string, string> = {}, count = 30) {
  const days = Array.from({ length: count }, (_, index) => {
    const date = new Date(Date.UTC(2026, 10, 30 - (count - 1) + index));
    const day = date.toISOString().slice(0, 10);
    return { day, amount: amounts[day] ?? '0' };
  });
  return { wallet_id: walletId, days };
}

/** A healthy, uncarved hami-core card. */
export function makeCard(overrides: Partial<CardOut> = {}): CardOut {
  return {
    id: '00000000-0000-4000-8000-0000000000d1',
    uuid: 'GPU-0001',
    node: 'node-a',
    model: 'NVIDIA H100 80GB HBM3',
    memory_mib: 81559,
    cores: 100,
    split_count: 4,
    healthy: true,
    missing: false,
    last_seen_at: '2026-11-30T11:58:00Z',
    pool: 'hami-core',
    carved_tier: null,
    carved_slots: null,
    free_slots: null,
    draining: false,
    mig_instances: [],
    occupants: [],
    ...overrides,
  };
}
