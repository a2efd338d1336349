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
  passwordCheck: ['password-check'] as const,
};
