import { Button, Menu } from '@mantine/core';
import { useNavigate } from 'react-router';
import { useLogout } from '../api/hooks/auth';
import { useSession } from '../auth/session';

export function UserMenu() {
  const { me } = useSession();
  const logout = useLogout();
  const navigate = useNavigate();

  const signOut = () => logout.mutate(undefined, { onSettled: () => navigate('/sign-in', { replace: true }) });

  return (
    <Menu position="bottom-end" width={240}>
      <Menu.Target>
        <Button variant="subtle" color="gray">
          {me.user.name || me.user.email}
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>{me.user.email}</Menu.Label>
        <Menu.Item onClick={() => navigate('/change-password')}>Change password</Menu.Item>
        <Menu.Divider />
        <Menu.Item color="red" onClick={signOut}>
          Sign out
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}
