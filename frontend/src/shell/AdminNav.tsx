import { NavLink } from '@mantine/core';
import { Link, useLocation } from 'react-router';

const LINKS = [
  { to: '/admin/orgs', label: 'Organizations' },
  { to: '/admin/groups', label: 'Groups' },
  { to: '/admin/users', label: 'Users' },
  { to: '/admin/credits', label: 'Credits' },
  { to: '/admin/audit', label: 'Audit log' },
];

export function AdminNav({ onNavigate }: { onNavigate: () => void }) {
  const { pathname } = useLocation();
  return (
    <nav aria-label="Administration">
      {LINKS.map((link) => (
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
