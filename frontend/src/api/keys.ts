// Query keys are shared so mutations can invalidate the lists they affect.
export const ME_KEY = ['me'] as const;

export const keys = {
  orgs: ['orgs'] as const,
  org: (orgId: string) => ['orgs', 'detail', orgId] as const,
  groups: ['groups'] as const,
  orgGroups: (orgId: string) => ['groups', 'by-org', orgId] as const,
  group: (groupId: string) => ['groups', 'detail', groupId] as const,
  users: ['users'] as const,
  members: (groupId: string) => ['members', groupId] as const,
  orgAdmins: (orgId: string) => ['admins', 'org', orgId] as const,
  groupAdmins: (groupId: string) => ['admins', 'group', groupId] as const,
  audit: ['audit'] as const,
  clusters: ['clusters'] as const,
  cluster: (clusterId: string) => ['clusters', 'detail', clusterId] as const,
  // Every credit movement changes balances, entries and trees: invalidate `wallets` as a whole.
  wallets: ['wallets'] as const,
  myWallet: ['wallets', 'me'] as const,
  wallet: (walletId: string) => ['wallets', 'detail', walletId] as const,
  walletEntries: (walletId: string) => ['wallets', 'entries', walletId] as const,
  walletConsumption: (walletId: string, days: number) => ['wallets', 'consumption', walletId, days] as const,
  walletTree: (orgId: string) => ['wallets', 'tree', orgId] as const,
  ledgerCheck: ['credits', 'check'] as const,
  passwordCheck: ['password-check'] as const,
};
