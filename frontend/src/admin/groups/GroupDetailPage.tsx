import { Anchor, Stack } from '@mantine/core';
import { Link, useParams } from 'react-router';
import { useGroupAdmins } from '../../api/hooks/admins';
import { useGroup } from '../../api/hooks/groups';
import type { GroupOut } from '../../api/types';
import { useSession } from '../../auth/session';
import { ListState } from '../../ui/ListState';
import { AdminGrantsSection } from '../AdminGrantsSection';
import { PageHeader } from '../PageHeader';
import { MembersSection } from './MembersSection';

function GroupAdmins({ group }: { group: GroupOut }) {
  const { can } = useSession();
  const grants = useGroupAdmins(group.id);
  return (
    <AdminGrantsSection
      heading="Group admins"
      scopeName={group.name}
      grants={grants}
      canEdit={can.canManageGroupAdmins(group.org_id)}
    />
  );
}

export function GroupDetailPage() {
  const { groupId = '' } = useParams();
  const { can } = useSession();
  const group = useGroup(groupId);

  return (
    <Stack maw={1100}>
      <ListState
        isPending={group.isPending}
        error={group.error}
        isEmpty={false}
        empty={null}
        onRetry={() => void group.refetch()}
      >
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
              canEdit={can.canManageGroup(group.data.org_id, group.data.id)}
            />
            {/* Only admins of the group may read its admin list. */}
            {can.canManageGroup(group.data.org_id, group.data.id) && <GroupAdmins group={group.data} />}
          </Stack>
        )}
      </ListState>
    </Stack>
  );
}
