import { useLocalStorage } from '@mantine/hooks';

export const ADMIN_BASE = '/admin';

/** The admin-mode preference, remembered per user in this browser. */
export function useAdminModePreference(userId: string) {
  return useLocalStorage<boolean>({
    key: `gshare.adminMode.${userId}`,
    defaultValue: false,
    // Read synchronously so the first render already knows where to land.
    getInitialValueInEffect: false,
  });
}

export function isAdminPath(pathname: string): boolean {
  return pathname === ADMIN_BASE || pathname.startsWith(`${ADMIN_BASE}/`);
}
