import { Anchor, List, Select, Stack, Text, Title } from '@mantine/core';
import { useEffect } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useOrgs } from '../../api/hooks/orgs';
import { useSession } from '../../auth/session';
import { ListState } from '../../ui/ListState';
import { PageHeader } from '../PageHeader';
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
  const orgs = useOrgs('', 200);
  const [params, setParams] = useSearchParams();
  const orgId = params.get('org');
  const firstOrg = orgs.items[0]?.id;
  const selected = orgs.items.find((org) => org.id === orgId);

  useEffect(() => {
    // Default to the first organization so the page is never blank.
    if (!orgId && firstOrg) setParams({ org: firstOrg }, { replace: true });
  }, [orgId, firstOrg, setParams]);

  return (
    <Stack maw={960} gap="lg">
      <PageHeader title="Groups" description="Groups belong to an organization; members of a group share its GPUs." />
      <AdministeredGroups />
      <ListState
        isPending={orgs.isPending}
        error={orgs.error}
        isEmpty={orgs.items.length === 0}
        empty="There are no organizations you can manage groups in."
        onRetry={orgs.refetch}
      >
        <Select
          label="Organization"
          data={orgs.items.map((org) => ({ value: org.id, label: org.name }))}
          value={orgId}
          onChange={(value) => value && setParams({ org: value })}
          allowDeselect={false}
          searchable
          maw={360}
        />
        {orgId && <GroupsSection key={orgId} orgId={orgId} heading={selected ? `Groups in ${selected.name}` : 'Groups'} />}
      </ListState>
    </Stack>
  );
}
