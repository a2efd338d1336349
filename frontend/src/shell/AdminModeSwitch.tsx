import { Switch } from '@mantine/core';
import { useLocation, useNavigate } from 'react-router';
import { useSession } from '../auth/session';
import { ADMIN_BASE, isAdminPath, useAdminModePreference } from './adminMode';

export function AdminModeSwitch() {
  const { me, adminMode } = useSession();
  const [, setPreference] = useAdminModePreference(me.user.id);
  const location = useLocation();
  const navigate = useNavigate();

  if (!adminMode) return null;

  const toggle = (on: boolean) => {
    setPreference(on);
    navigate(on ? ADMIN_BASE : '/');
  };

  return (
    <Switch
      label="Admin mode"
      checked={isAdminPath(location.pathname)}
      onChange={(event) => toggle(event.currentTarget.checked)}
    />
  );
}
