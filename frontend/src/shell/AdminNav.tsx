import { NavLink } from '@mantine/core';
import { Link, useLocation } from 'react-router';
import { CATALOG_MANAGE, SESSIONS_READ_SCOPE, WORKER_HEALTH } from '../admin/sessions/access';
import type { Action } from '../auth/capabilities';
import { useSession } from '../auth/session';

interface AdminLink {
  to: string;
  label: string;
  /** Shown only to admins who may do this somewhere; every admin by default. */
  needs?: Action;
}

const LINKS: AdminLink[] = [
  { to: '/admin/orgs', label: 'Organizations' },
  { to: '/admin/groups', label: 'Groups' },
  { to: '/admin/users', label: 'Users' },
  { to: '/admin/credits', label: 'Credits' },
  { to: '/admin/clusters', label: 'Clusters', needs: 'clusters.manage' },
  { to: '/admin/tiers', label: 'Tiers and prices', needs: 'capacity.read' },
  { to: '/admin/policies', label: 'Policies' },
  { to: '/admin/isolation', label: 'Isolation', needs: 'isolation.manage' },
  { to: '/admin/queue', label: 'Queue', needs: 'queue.read_scope' },
  { to: '/admin/sessions', label: 'Sessions', needs: SESSIONS_READ_SCOPE },
  { to: '/admin/catalog', label: 'Session catalog', needs: CATALOG_MANAGE },
  { to: '/admin/worker', label: 'Worker health', needs: WORKER_HEALTH },
  { to: '/admin/audit', label: 'Audit log' },
];

export function AdminNav({ onNavigate }: { onNavigate: () => void }) {
  const { canSomewhere } = useSession();
  const { pathname } = useLocation();
  return (
    <nav aria-label="Administration">
      {LINKS.filter((link) => !link.needs || canSomewhere(link.needs)).map((link) => (
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
