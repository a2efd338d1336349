import { useMemo } from 'react';
import { useGroupsOfOrgs } from '../api/hooks/groups';
import { useOrgs } from '../api/hooks/orgs';
import type { Action } from '../auth/capabilities';
import { useSession } from '../auth/session';

/** A group the caller may act on, with its organization. */
export interface ActionableGroup {
  id: string;
  name: string;
  orgId: string | null;
  orgName: string;
}

/** Select data: the groups of one organization, under its name. */
export interface GroupOptionsOfOrg {
  group: string;
  items: { value: string; label: string }[];
}

export interface ActionableGroups {
  /** The listed groups of every organization the caller sees, then the groups they administer. */
  groups: ActionableGroup[];
  /** The same groups by organization, for a grouped picker. */
  options: GroupOptionsOfOrg[];
  /** Group names by id. */
  names: Map<string, string>;
  isPending: boolean;
}

/**
 * Groups in which the caller may take `action`, by organization, for pickers; with `null`, every
 * group the caller sees. `enabled: false` holds back the group lists until a picker is shown.
 */
export function useActionableGroups(
  action: Action | null,
  { enabled = true }: { enabled?: boolean } = {},
): ActionableGroups {
  const { me, can } = useSession();
  const orgs = useOrgs('', 200);
  const listed = useGroupsOfOrgs(enabled ? orgs.items.map((org) => org.id) : []);

  return useMemo(() => {
    const found = new Map<string, ActionableGroup>();
    const add = (group: ActionableGroup) => {
      if (found.has(group.id)) return;
      if (action !== null && !can(action, { orgId: group.orgId, groupId: group.id })) return;
      found.set(group.id, group);
    };
    const orgName = new Map(orgs.items.map((org) => [org.id, org.name]));
    for (const group of listed.groups) {
      add({ id: group.id, name: group.name, orgId: group.org_id, orgName: orgName.get(group.org_id) ?? 'Other' });
    }
    // Group admins may not see the organization list; their grants name their groups.
    for (const role of me.roles) {
      if (role.role === 'group_admin' && role.group_id) {
        add({
          id: role.group_id,
          name: role.group_name ?? role.group_id,
          orgId: role.org_id ?? null,
          orgName: role.org_name ?? 'Other',
        });
      }
    }

    const groups = [...found.values()];
    const byOrg = new Map<string, { value: string; label: string }[]>();
    for (const group of groups) {
      byOrg.set(group.orgName, [...(byOrg.get(group.orgName) ?? []), { value: group.id, label: group.name }]);
    }
    return {
      groups,
      options: [...byOrg.entries()].map(([group, items]) => ({ group, items })),
      names: new Map(groups.map((group) => [group.id, group.name])),
      isPending: orgs.isPending || listed.isPending,
    };
  }, [orgs.items, orgs.isPending, listed.groups, listed.isPending, me.roles, can, action]);
}

/** "Organization / Group", for a flat picker. */
export function labelWithOrg(group: ActionableGroup): string {
  return `${group.orgName} / ${group.name}`;
}
