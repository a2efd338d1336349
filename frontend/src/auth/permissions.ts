import type { MeOut, UserOut } from '../api/types';

// What the console offers each role, mirroring the server's rules. The server
// still decides; this only hides controls a user could not use anyway.
export interface Permissions {
  isSuperAdmin: boolean;
  isAnyAdmin: boolean;
  canCreateOrg: boolean;
  canDeleteOrg: boolean;
  canEditOrg: (orgId: string) => boolean;
  canManageOrgAdmins: (orgId: string) => boolean;
  canCreateOrDeleteGroups: (orgId: string) => boolean;
  canManageGroupAdmins: (orgId: string) => boolean;
  /** Group admins (and admins of its organization) rename the group and manage members. */
  canManageGroup: (orgId: string, groupId: string) => boolean;
  /** Only the super admin may create a user outside any group. */
  mustPickGroupForNewUser: boolean;
  canSetUserActive: (user: UserOut) => boolean;
  /** New credits enter only through the super admin. */
  canMintCredits: boolean;
  canCheckLedger: boolean;
  /** Allocate to or take back from a group of this organization. */
  canMoveGroupCredits: (orgId: string) => boolean;
  /** Allocate to or take back from a member of this group. */
  canMoveMemberCredits: (orgId: string, groupId: string) => boolean;
  canSetOrgGrant: boolean;
  canSetGroupGrant: (orgId: string) => boolean;
  /** For a member's grant paid from this group's wallet. */
  canSetMemberGrant: (orgId: string, groupId: string) => boolean;
  /** Clusters are listed, registered and removed by the super admin alone. */
  canManageClusters: boolean;
}

export function permissionsFor(me: MeOut): Permissions {
  const roles = me.roles;
  const isSuperAdmin = me.user.is_super_admin || roles.some((r) => r.role === 'super_admin');
  const isAnyAdmin = isSuperAdmin || roles.length > 0;
  const isOrgAdmin = (orgId: string) =>
    isSuperAdmin || roles.some((r) => r.role === 'org_admin' && r.org_id === orgId);
  const isGroupAdmin = (orgId: string, groupId: string) =>
    isOrgAdmin(orgId) || roles.some((r) => r.role === 'group_admin' && r.group_id === groupId);

  return {
    isSuperAdmin,
    isAnyAdmin,
    canCreateOrg: isSuperAdmin,
    canDeleteOrg: isSuperAdmin,
    canEditOrg: isOrgAdmin,
    canManageOrgAdmins: isOrgAdmin,
    canCreateOrDeleteGroups: isOrgAdmin,
    canManageGroupAdmins: isOrgAdmin,
    canManageGroup: isGroupAdmin,
    mustPickGroupForNewUser: !isSuperAdmin,
    // Whether the target lies fully in this admin's reach is only known to the server.
    canSetUserActive: (user) => isAnyAdmin && user.id !== me.user.id && (isSuperAdmin || !user.is_super_admin),
    canMintCredits: isSuperAdmin,
    canCheckLedger: isSuperAdmin,
    canMoveGroupCredits: isOrgAdmin,
    canMoveMemberCredits: isGroupAdmin,
    canSetOrgGrant: isSuperAdmin,
    canSetGroupGrant: isOrgAdmin,
    canSetMemberGrant: isGroupAdmin,
    canManageClusters: isSuperAdmin,
  };
}
