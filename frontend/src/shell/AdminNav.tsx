import { NavLink } from '@mantine/core';
import { Link, useLocation } from 'react-router';
import type { Permissions } from '../auth/permissions';
import { useSession } from '../auth/session';

interface AdminLink {
  to: string;
  label: string;
  /** Shown only to admins who may use the page; every admin by default. */
  visible?: (can: Permissions) => boolean;
}

const LINKS: AdminLink[] = [
  { to: '/admin/orgs', label: 'Organizations' },
  { to: '/admin/groups', label: 'Groups' },
  { to: '/admin/users', label: 'Users' },
  { to: '/admin/credits', label: 'Credits' },
  { to: '/admin/clusters', label: 'Clusters', visible: (can) => can.canManageClusters },
  { to: '/admin/audit', label: 'Audit log' },
];

export function AdminNav({ onNavigate }: { onNavigate: () => void }) {
  const { can } = useSession();
  const { pathname } = useLocation();
  return (
    <nav aria-label="Administration">
      {LINKS.filter((link) => !link.visible || link.visible(can)).map((link) => (
        <NavLink
          key={link.to}
          component={Link}
          to={link.to}
          label={link.label}
          active={pathname === link.to || pathname.startsWith(`${link.to}/`)}
          onClick={onNavigate}
        />
      ))}
    </nav>
  );
}
