import { useMemo } from 'react';
import { useGroupsOfOrgs } from '../../api/hooks/groups';
import { useOrgs } from '../../api/hooks/orgs';
import { useSession } from '../../auth/session';

interface GroupOption {
  group: string;
  items: { value: string; label: string }[];
}

/** Groups the current admin may add people to, grouped by organization. */
export function useAssignableGroups(enabled: boolean): { options: GroupOption[]; isPending: boolean } {
  const { me, can } = useSession();
  const orgs = useOrgs('', 200);
  const orgIds = enabled ? orgs.items.map((org) => org.id) : [];
  const groups = useGroupsOfOrgs(orgIds);

  const options = useMemo(() => {
    const byOrg = new Map<string, { value: string; label: string }[]>();
    const seen = new Set<string>();
    const add = (orgName: string, groupId: string, groupName: string) => {
      if (seen.has(groupId)) return;
      seen.add(groupId);
      byOrg.set(orgName, [...(byOrg.get(orgName) ?? []), { value: groupId, label: groupName }]);
    };
    const orgName = new Map(orgs.items.map((org) => [org.id, org.name]));
    for (const group of groups.groups) {
      if (can('user.create', { orgId: group.org_id, groupId: group.id })) {
        add(orgName.get(group.org_id) ?? 'Other', group.id, group.name);
      }
    }
    // Group admins may not see the organization list; their grants name their groups.
    for (const role of me.roles) {
      if (role.role === 'group_admin' && role.group_id) {
        add(role.org_name ?? 'Other', role.group_id, role.group_name ?? role.group_id);
      }
    }
    return [...byOrg.entries()].map(([group, items]) => ({ group, items }));
  }, [orgs.items, groups.groups, me.roles, can]);

  return { options, isPending: orgs.isPending || groups.isPending };
}
