import { describe, expect, it } from 'vitest';
import type { RoleGrantOut } from '../api/types';
import { makeMe, SUPER_ADMIN } from '../test/fixtures';
import { permissionsFor } from './permissions';

const ORG = 'org-1';
const OTHER_ORG = 'org-2';
const GROUP = 'group-1';

const grant = (role: RoleGrantOut['role'], org_id: string | null, group_id: string | null): RoleGrantOut => ({
  role,
  org_id,
  group_id,
  org_name: null,
  group_name: null,
});

describe('permissions', () => {
  it('lets the super admin do everything', () => {
    const can = permissionsFor(makeMe({}, [SUPER_ADMIN]));
    expect(can.isAnyAdmin && can.canCreateOrg && can.canDeleteOrg).toBe(true);
    expect(can.canManageGroup(OTHER_ORG, 'any')).toBe(true);
    expect(can.mustPickGroupForNewUser).toBe(false);
  });

  it('limits an org admin to their organization', () => {
    const can = permissionsFor(makeMe({}, [grant('org_admin', ORG, null)]));
    expect(can.canCreateOrg).toBe(false);
    expect(can.canDeleteOrg).toBe(false);
    expect(can.canEditOrg(ORG)).toBe(true);
    expect(can.canEditOrg(OTHER_ORG)).toBe(false);
    expect(can.canManageOrgAdmins(ORG)).toBe(true);
    expect(can.canCreateOrDeleteGroups(ORG)).toBe(true);
    expect(can.canManageGroup(ORG, 'any-group-of-org')).toBe(true);
  });

  it('limits a group admin to their group', () => {
    const can = permissionsFor(makeMe({}, [grant('group_admin', ORG, GROUP)]));
    expect(can.isAnyAdmin).toBe(true);
    expect(can.canEditOrg(ORG)).toBe(false);
    expect(can.canCreateOrDeleteGroups(ORG)).toBe(false);
    expect(can.canManageGroupAdmins(ORG)).toBe(false);
    expect(can.canManageGroup(ORG, GROUP)).toBe(true);
    expect(can.canManageGroup(ORG, 'group-2')).toBe(false);
    expect(can.mustPickGroupForNewUser).toBe(true);
  });

  it('gives plain members no admin controls', () => {
    const me = makeMe();
    const can = permissionsFor(me);
    expect(can.isAnyAdmin).toBe(false);
    expect(can.canSetUserActive({ ...me.user, id: 'someone-else' })).toBe(false);
  });

  it('leaves minting and the ledger check to the super admin', () => {
    const superAdmin = permissionsFor(makeMe({}, [SUPER_ADMIN]));
    expect(superAdmin.canMintCredits && superAdmin.canCheckLedger && superAdmin.canSetOrgGrant).toBe(true);
    expect(superAdmin.canMoveGroupCredits(ORG) && superAdmin.canMoveMemberCredits(OTHER_ORG, 'any')).toBe(true);

    const orgAdmin = permissionsFor(makeMe({}, [grant('org_admin', ORG, null)]));
    expect(orgAdmin.canMintCredits || orgAdmin.canCheckLedger || orgAdmin.canSetOrgGrant).toBe(false);
  });

  it('lets an org admin move credits to groups and members of their organization only', () => {
    const can = permissionsFor(makeMe({}, [grant('org_admin', ORG, null)]));
    expect(can.canMoveGroupCredits(ORG)).toBe(true);
    expect(can.canSetGroupGrant(ORG)).toBe(true);
    expect(can.canMoveMemberCredits(ORG, GROUP)).toBe(true);
    expect(can.canSetMemberGrant(ORG, GROUP)).toBe(true);
    expect(can.canMoveGroupCredits(OTHER_ORG)).toBe(false);
    expect(can.canMoveMemberCredits(OTHER_ORG, 'group-9')).toBe(false);
  });

  it('lets a group admin move credits only between their group and its members', () => {
    const can = permissionsFor(makeMe({}, [grant('group_admin', ORG, GROUP)]));
    expect(can.canMoveGroupCredits(ORG)).toBe(false);
    expect(can.canSetGroupGrant(ORG)).toBe(false);
    expect(can.canMoveMemberCredits(ORG, GROUP)).toBe(true);
    expect(can.canSetMemberGrant(ORG, GROUP)).toBe(true);
    expect(can.canMoveMemberCredits(ORG, 'group-2')).toBe(false);
  });

  it('leaves clusters to the super admin', () => {
    expect(permissionsFor(makeMe({}, [SUPER_ADMIN])).canManageClusters).toBe(true);
    expect(permissionsFor(makeMe({}, [grant('org_admin', ORG, null)])).canManageClusters).toBe(false);
    expect(permissionsFor(makeMe({}, [grant('group_admin', ORG, GROUP)])).canManageClusters).toBe(false);
    expect(permissionsFor(makeMe()).canManageClusters).toBe(false);
  });

  it('never offers to deactivate yourself', () => {
    const me = makeMe({}, [SUPER_ADMIN]);
    expect(permissionsFor(me).canSetUserActive(me.user)).toBe(false);
  });
});
