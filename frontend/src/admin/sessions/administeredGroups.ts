import { useMemo } from 'react';
import { useGroupsOfOrgs } from '../../api/hooks/groups';
import { useOrgs } from '../../api/hooks/orgs';
import type { Action } from '../../auth/capabilities';
import { useSession } from '../../auth/session';

export interface GroupChoice {
  group: string;
  items: { value: string; label: string }[];
}

export interface AdministeredGroups {
  options: GroupChoice[];
  /** Group names by id. */
  names: Map<string, string>;
  isPending: boolean;
}

/** Groups in which the current admin may take `action`, by organization, for pickers. */
export function useAdministeredGroups(action: Action): AdministeredGroups {
  const { me, can } = useSession();
  const orgs = useOrgs('', 200);
  const groups = useGroupsOfOrgs(orgs.items.map((org) => org.id));

  return useMemo(() => {
    const byOrg = new Map<string, { value: string; label: string }[]>();
    const names = new Map<string, string>();
    const add = (orgName: string, groupId: string, groupName: string) => {
      if (names.has(groupId)) return;
      names.set(groupId, groupName);
      byOrg.set(orgName, [...(byOrg.get(orgName) ?? []), { value: groupId, label: groupName }]);
    };
    const orgName = new Map(orgs.items.map((org) => [org.id, org.name]));
    for (const group of groups.groups) {
      if (can(action, { orgId: group.org_id, groupId: group.id })) {
        add(orgName.get(group.org_id) ?? 'Other', group.id, group.name);
      }
    }
    // Group admins may not see the organization list; their grants name their groups.
    for (const role of me.roles) {
      if (role.role === 'group_admin' && role.group_id && can(action, { orgId: role.org_id, groupId: role.group_id })) {
        add(role.org_name ?? 'Other', role.group_id, role.group_name ?? role.group_id);
      }
    }
    return {
      options: [...byOrg.entries()].map(([group, items]) => ({ group, items })),
      names,
      isPending: orgs.isPending || groups.isPending,
    };
  }, [orgs.items, orgs.isPending, groups.groups, groups.isPending, me.roles, can, action]);
}
