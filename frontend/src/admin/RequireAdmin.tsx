import { Navigate, Outlet } from 'react-router';
import { useSession } from '../auth/session';

export function RequireAdmin() {
  const { can } = useSession();
  return can.isAnyAdmin ? <Outlet /> : <Navigate to="/" replace />;
}
