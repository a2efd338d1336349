import { MantineProvider } from '@mantine/core';
import { DatesProvider } from '@mantine/dates';
import { Notifications } from '@mantine/notifications';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { AuditPage } from './admin/audit/AuditPage';
import { PoliciesPage } from './admin/capacity/PoliciesPage';
import { IsolationPage } from './admin/isolation/IsolationPage';
import { QueuePage } from './admin/capacity/QueuePage';
import { TiersPage } from './admin/capacity/TiersPage';
import { ClusterDetailPage } from './admin/clusters/ClusterDetailPage';
import { ClustersPage } from './admin/clusters/ClustersPage';
import { CreditsPage } from './admin/credits/CreditsPage';
import { WalletDetailPage } from './admin/credits/WalletDetailPage';
import { GroupDetailPage } from './admin/groups/GroupDetailPage';
import { GroupsPage } from './admin/groups/GroupsPage';
import { OrgDetailPage } from './admin/orgs/OrgDetailPage';
import { OrgsPage } from './admin/orgs/OrgsPage';
import { RequireAdmin, RequireCapability } from './admin/RequireAdmin';
import { CATALOG_MANAGE, SESSIONS_READ_SCOPE } from './admin/sessions/access';
import { AdminSessionsPage } from './admin/sessions/AdminSessionsPage';
import { WorkerHealthPage } from './admin/sessions/WorkerHealthPage';
import { CatalogPage } from './admin/sessions/CatalogPage';
import { UsersPage } from './admin/users/UsersPage';
import { createQueryClient } from './api/queryClient';
import { PasswordChangePage } from './auth/PasswordChangePage';
import { CHANGE_PASSWORD_PATH, RequireAuth } from './auth/RequireAuth';
import { SignInPage } from './auth/SignInPage';
import { BookingsPage } from './bookings/BookingsPage';
import { MyGroupPage } from './group/MyGroupPage';
import { HomePage } from './home/HomePage';
import { MyRequestsPage } from './queue/MyRequestsPage';
import { NewSessionPage } from './sessions/NewSessionPage';
import { SessionDetailPage } from './sessions/SessionDetailPage';
import { SessionsPage } from './sessions/SessionsPage';
import { VolumesPage } from './sessions/VolumesPage';
import { Shell } from './shell/Shell';
import { cssVariablesResolver, theme } from './theme';
import { RouteErrorBoundary } from './ui/RouteErrorBoundary';
import { UsagePage } from './usage/UsagePage';
import { WalletPage } from './wallet/WalletPage';

interface AppProvidersProps {
  client: QueryClient;
  /** Put on every <style> tag Mantine writes, as the page's Content-Security-Policy requires. */
  styleNonce?: string;
  children: ReactNode;
}

export function AppProviders({ client, styleNonce, children }: AppProvidersProps) {
  return (
    <MantineProvider
      theme={theme}
      cssVariablesResolver={cssVariablesResolver}
      getStyleNonce={styleNonce ? () => styleNonce : undefined}>
      <Notifications position="top-right" />
      {/* Pickers work in the browser's local time; pages send what they pick as UTC instants. */}
      <DatesProvider settings={{ consistentWeeks: true }}>
        <QueryClientProvider client={client}>{children}</QueryClientProvider>
      </DatesProvider>
    </MantineProvider>
  );
}

/** Each page has its own error boundary: one failing page leaves the shell usable. */
const page = (element: ReactNode) => <RouteErrorBoundary>{element}</RouteErrorBoundary>;

export function AppRoutes() {
  return (
    <Routes>
      <Route path="/sign-in" element={page(<SignInPage />)} />
      <Route element={<RequireAuth />}>
        <Route path={CHANGE_PASSWORD_PATH} element={page(<PasswordChangePage />)} />
        <Route element={<Shell />}>
          <Route index element={page(<HomePage />)} />
          <Route path="wallet" element={page(<WalletPage />)} />
          <Route path="requests" element={page(<MyRequestsPage />)} />
          <Route path="sessions" element={page(<SessionsPage />)} />
          <Route path="sessions/new" element={page(<NewSessionPage />)} />
          <Route path="sessions/:sessionId" element={page(<SessionDetailPage />)} />
          <Route path="volumes" element={page(<VolumesPage />)} />
          <Route path="bookings" element={page(<BookingsPage />)} />
          <Route path="group" element={page(<MyGroupPage />)} />
          <Route path="usage" element={page(<UsagePage />)} />
          <Route path="admin" element={<RequireAdmin />}>
            <Route index element={<Navigate to="orgs" replace />} />
            <Route path="orgs" element={page(<OrgsPage />)} />
            <Route path="orgs/:orgId" element={page(<OrgDetailPage />)} />
            <Route path="groups" element={page(<GroupsPage />)} />
            <Route path="groups/:groupId" element={page(<GroupDetailPage />)} />
            <Route path="users" element={page(<UsersPage />)} />
            <Route path="credits" element={page(<CreditsPage />)} />
            <Route path="credits/wallets/:walletId" element={page(<WalletDetailPage />)} />
            <Route element={<RequireCapability action="clusters.manage" />}>
              <Route path="clusters" element={page(<ClustersPage />)} />
              <Route path="clusters/:clusterId" element={page(<ClusterDetailPage />)} />
            </Route>
            <Route element={<RequireCapability action="capacity.read" />}>
              <Route path="tiers" element={page(<TiersPage />)} />
            </Route>
            <Route path="policies" element={page(<PoliciesPage />)} />
            <Route element={<RequireCapability action="isolation.manage" />}>
              <Route path="isolation" element={page(<IsolationPage />)} />
            </Route>
            <Route element={<RequireCapability action="queue.read_scope" />}>
              <Route path="queue" element={page(<QueuePage />)} />
            </Route>
            <Route element={<RequireCapability action={SESSIONS_READ_SCOPE} />}>
              <Route path="sessions" element={page(<AdminSessionsPage />)} />
            </Route>
            <Route element={<RequireCapability action={CATALOG_MANAGE} />}>
              <Route path="catalog" element={page(<CatalogPage />)} />
              <Route path="worker" element={page(<WorkerHealthPage />)} />
            </Route>
            <Route path="audit" element={page(<AuditPage />)} />
          </Route>
        </Route>
      </Route>
      <Route path="*" element={<Navigate to="/" replace />} />
    </Routes>
  );
}

export function App({ styleNonce }: { styleNonce?: string }) {
  const [client] = useState(() => createQueryClient());
  return (
    <AppProviders client={client} styleNonce={styleNonce}>
      <BrowserRouter>
        <AppRoutes />
      </BrowserRouter>
    </AppProviders>
  );
}
