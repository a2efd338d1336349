import { Anchor, Stack } from '@mantine/core';
import { Link, useParams } from 'react-router';
import { useGroupAdmins } from '../../api/hooks/admins';
import { useGroup } from '../../api/hooks/groups';
import type { GroupOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { QueryState } from '../../ui/QueryState';
import { AdminGrantsSection } from '../AdminGrantsSection';
import { PageHeader } from '../../ui/PageHeader';
import { MembersSection } from './MembersSection';

function GroupAdmins({ group }: { group: GroupOut }) {
  const { can } = useSession();
  const grants = useGroupAdmins(group.id);
  return (
    <AdminGrantsSection
      heading="Group admins"
      scopeName={group.name}
      grants={grants}
      canEdit={can('group.admins.manage', { orgId: group.org_id, groupId: group.id })}
    />
  );
}

export function GroupDetailPage() {
  const { groupId = '' } = useParams();
  const { can } = useSession();
  const group = useGroup(groupId);
  const where = { orgId: group.data?.org_id, groupId: group.data?.id };

  return (
    <Stack maw={1100}>
      <QueryState query={group}>
        {group.data && (
          <Stack gap="xl">
            <div>
              <Anchor component={Link} to={`/admin/groups?org=${group.data.org_id}`} size="sm">
                ← Groups
              </Anchor>
              <PageHeader title={group.data.name} description="Group memberships and admins" />
            </div>
            <MembersSection
              groupId={group.data.id}
              groupName={group.data.name}
              canEdit={can('group.members.manage', where)}
            />
            {/* Only admins of the group may read its admin list. */}
            {can('group.admins.read', where) && <GroupAdmins group={group.data} />}
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}
