import { Navigate, Outlet } from 'react-router';
import type { Action } from '../auth/capabilities';
import { useSession } from '../auth/session';

export function RequireAdmin() {
  const { adminMode } = useSession();
  return adminMode ? <Outlet /> : <Navigate to="/" replace />;
}

/** Admin pages open to some admins only; the others land on the admin home. */
export function RequireCapability({ action }: { action: Action }) {
  const { canSomewhere } = useSession();
  return canSomewhere(action) ? <Outlet /> : <Navigate to="/admin" replace />;
}
