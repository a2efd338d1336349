import type { MeOut } from '../api/types';

// What the console offers each role. The server enforces the real rules;
// this only hides controls a user could not use anyway.
export interface Permissions {
  isSuperAdmin: boolean;
  isAnyAdmin: boolean;
  canCreateOrg: boolean;
  canDeleteOrg: boolean;
  canManageOrgAdmins: boolean;
  canManageUsers: boolean;
  canEditOrg: (orgId: string) => boolean;
  canManageGroups: (orgId: string) => boolean;
  canManageGroupAdmins: (orgId: string) => boolean;
  canManageMembers: (orgId: string, groupId: string) => boolean;
}

export function permissionsFor(me: MeOut): Permissions {
  const roles = me.roles;
  const isSuperAdmin = me.user.is_super_admin || roles.some((r) => r.role === 'super_admin');
  const isOrgAdmin = (orgId: string) =>
    isSuperAdmin || roles.some((r) => r.role === 'org_admin' && r.org_id === orgId);
  const isGroupAdmin = (orgId: string, groupId: string) =>
    isOrgAdmin(orgId) || roles.some((r) => r.role === 'group_admin' && r.group_id === groupId);

  return {
    isSuperAdmin,
    isAnyAdmin: isSuperAdmin || roles.length > 0,
    canCreateOrg: isSuperAdmin,
    canDeleteOrg: isSuperAdmin,
    canManageOrgAdmins: isSuperAdmin,
    canManageUsers: isSuperAdmin || roles.some((r) => r.role === 'org_admin'),
    canEditOrg: isOrgAdmin,
    canManageGroups: isOrgAdmin,
    canManageGroupAdmins: isOrgAdmin,
    canManageMembers: isGroupAdmin,
  };
}
