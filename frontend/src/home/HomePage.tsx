import { Badge, Button, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { Link, Navigate, useNavigate } from 'react-router';
import type { MembershipOut } from '../api/types';
import { useSession } from '../auth/session';
import { ADMIN_BASE, useAdminModePreference } from '../shell/adminMode';
import { formatDate } from '../ui/format';

function MembershipCard({ membership }: { membership: MembershipOut }) {
  return (
    <Card withBorder padding="md" radius="md">
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <div>
          <Text fw={600}>{membership.group_name}</Text>
          <Text size="sm" c="dimmed">
            {membership.org_name}
          </Text>
        </div>
        <Badge variant="light" color={membership.role === 'guest' ? 'grape' : 'blue'}>
          {membership.role}
        </Badge>
      </Group>
      {membership.expires_at && (
        <Text size="xs" c={membership.active ? 'dimmed' : 'red'} mt="sm">
          {membership.active ? 'Guest access until ' : 'Guest access ended '}
          {formatDate(membership.expires_at)}
        </Text>
      )}
    </Card>
  );
}

export function HomePage() {
  const { me, adminMode: isAdmin } = useSession();
  const [adminMode, setAdminMode] = useAdminModePreference(me.user.id);
  const navigate = useNavigate();

  if (isAdmin && adminMode) return <Navigate to={ADMIN_BASE} replace />;

  const memberships = me.memberships;
  return (
    <Stack maw={960}>
      <Title order={2}>Welcome, {me.user.name || me.user.email}</Title>
      <Text c="dimmed">Your groups decide which GPUs you can use.</Text>
      {memberships.some((membership) => membership.active) && (
        <Group gap="xs">
          <Button component={Link} to="/sessions/new">
            New session
          </Button>
          <Button component={Link} to="/sessions" variant="light">
            Your sessions
          </Button>
        </Group>
      )}
      <Title order={3} size="h4" mt="md">
        Your groups
      </Title>
      {memberships.length === 0 && isAdmin ? (
        <Stack gap="xs" align="flex-start">
          <Text c="dimmed" size="sm">
            You are not a member of any group. Organizations, groups, users and credits are managed in admin mode.
          </Text>
          <Button
            variant="light"
            onClick={() => {
              setAdminMode(true);
              navigate(ADMIN_BASE);
            }}
          >
            Open admin mode
          </Button>
        </Stack>
      ) : memberships.length === 0 ? (
        <Text c="dimmed" size="sm">
          You are not a member of any group yet. Ask an administrator to add you.
        </Text>
      ) : (
        <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }}>
          {memberships.map((membership) => (
            <MembershipCard key={membership.group_id} membership={membership} />
          ))}
        </SimpleGrid>
      )}
    </Stack>
  );
}
