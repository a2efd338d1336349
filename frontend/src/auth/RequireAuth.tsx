import { Navigate, Outlet, useLocation } from 'react-router';
import { useMe } from '../api/hooks/me';
import { FullPageError, FullPageLoader } from '../ui/FullPage';
import { SessionProvider } from './session';

export const CHANGE_PASSWORD_PATH = '/change-password';

export function RequireAuth() {
  const me = useMe();
  const location = useLocation();

  if (me.isPending) return <FullPageLoader />;
  if (me.isError && me.data === undefined) return <FullPageError error={me.error} onRetry={() => void me.refetch()} />;
  if (!me.data) return <Navigate to="/sign-in" replace state={{ from: location.pathname + location.search }} />;
  if (me.data.must_change_password && location.pathname !== CHANGE_PASSWORD_PATH) {
    return <Navigate to={CHANGE_PASSWORD_PATH} replace />;
  }
  return (
    <SessionProvider me={me.data}>
      <Outlet />
    </SessionProvider>
  );
}
