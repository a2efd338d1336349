import type { MeOut } from '../api/types';

/**
 * Names of the actions the server reports in `/me` (`capabilities`). The server decides each
 * one with the same rules it enforces; the console only looks them up to hide controls a user
 * could not use.
 */
export type Action =
  | 'admin_mode'
  | 'org.create'
  | 'org.update'
  | 'org.delete'
  | 'org.admins.read'
  | 'org.admins.manage'
  | 'group.create'
  | 'group.update'
  | 'group.delete'
  | 'group.admins.read'
  | 'group.admins.manage'
  | 'group.members.manage'
  | 'user.create'
  | 'user.set_active'
  | 'user.reset_password'
  | 'user.super_admin.manage'
  | 'audit.read'
  | 'wallet.tree'
  | 'credits.mint'
  | 'credits.check'
  | 'credits.move_org_group'
  | 'credits.move_group_user'
  | 'credits.grant_org'
  | 'credits.grant_group'
  | 'credits.grant_user'
  | 'clusters.manage'
  | 'capacity.read'
  | 'capacity.manage'
  | 'policy.read_global'
  | 'policy.set_global'
  | 'policy.read_org'
  | 'policy.set_org'
  | 'policy.read_group'
  | 'policy.set_group'
  | 'policy.set_user'
  | 'queue.read_scope'
  | 'session.read_scope'
  | 'catalog.manage'
  | 'volume.manage_group'
  | 'booking.manage'
  | 'worker.health'
  | 'isolation.manage'
  | 'isolation.audit';

/** Where an action would happen: an organization, or a group with its organization. */
export interface Where {
  orgId?: string | null;
  groupId?: string | null;
}

export interface Capabilities {
  /** Allowed anywhere, for this organization (and every group in it), or in this group. */
  can: (action: Action, where?: Where) => boolean;
  /** Allowed in at least one place: whether to offer the action at all. */
  canSomewhere: (action: Action) => boolean;
  /** Holds an admin role: admin mode and its pages are offered. */
  adminMode: boolean;
}

export function capabilitiesOf(me: MeOut): Capabilities {
  const { actions, orgs, groups } = me.capabilities;
  const anywhere = new Set(actions);
  const byOrg = new Map(orgs.map((entry) => [entry.org_id, new Set(entry.actions)]));
  const byGroup = new Map(groups.map((entry) => [entry.group_id, new Set(entry.actions)]));
  const somewhere = new Set([...actions, ...orgs.flatMap((e) => e.actions), ...groups.flatMap((e) => e.actions)]);

  const can = (action: Action, where: Where = {}) =>
    anywhere.has(action) ||
    (where.orgId != null && (byOrg.get(where.orgId)?.has(action) ?? false)) ||
    (where.groupId != null && (byGroup.get(where.groupId)?.has(action) ?? false));

  return { can, canSomewhere: (action) => somewhere.has(action), adminMode: anywhere.has('admin_mode') };
}
