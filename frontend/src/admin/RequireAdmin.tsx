import { Navigate, Outlet } from 'react-router';
import type { Permissions } from '../auth/permissions';
import { useSession } from '../auth/session';

export function RequireAdmin() {
  const { can } = useSession();
  return can.isAnyAdmin ? <Outlet /> : <Navigate to="/" replace />;
}

/** Admin pages open to some admins only; the others land on the admin home. */
export function RequirePermission({ allowed }: { allowed: (can: Permissions) => boolean }) {
  const { can } = useSession();
  return allowed(can) ? <Outlet /> : <Navigate to="/admin" replace />;
}
