import { Anchor, List, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useSession } from '../../auth/session';
import { OrgPicker } from '../OrgPicker';
import { PageHeader } from '../../ui/PageHeader';
import { GroupsSection } from './GroupsSection';

function AdministeredGroups() {
  const { me } = useSession();
  const grants = me.roles.filter((role) => role.role === 'group_admin' && role.group_id);
  if (grants.length === 0) return null;
  return (
    <Stack gap="xs">
      <Title order={3} size="h4">
        Groups you administer
      </Title>
      <List>
        {grants.map((grant) => (
          <List.Item key={grant.group_id}>
            <Anchor component={Link} to={`/admin/groups/${grant.group_id}`}>
              {grant.group_name ?? grant.group_id}
            </Anchor>
            {grant.org_name && (
              <Text span size="sm" c="dimmed">
                {' '}
                in {grant.org_name}
              </Text>
            )}
          </List.Item>
        ))}
      </List>
    </Stack>
  );
}

export function GroupsPage() {
  return (
    <Stack maw={960} gap="lg">
      <PageHeader title="Groups" description="Groups belong to an organization; members of a group share its GPUs." />
      <AdministeredGroups />
      <OrgPicker empty="There are no organizations you can manage groups in.">
        {(org) => <GroupsSection key={org.id} orgId={org.id} heading={`Groups in ${org.name}`} />}
      </OrgPicker>
    </Stack>
  );
}
