import { MantineProvider } from '@mantine/core';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { AuditPage } from './admin/audit/AuditPage';
import { ClusterDetailPage } from './admin/clusters/ClusterDetailPage';
import { ClustersPage } from './admin/clusters/ClustersPage';
import { CreditsPage } from './admin/credits/CreditsPage';
import { WalletDetailPage } from './admin/credits/WalletDetailPage';
import { GroupDetailPage } from './admin/groups/GroupDetailPage';
import { GroupsPage } from './admin/groups/GroupsPage';
import { OrgDetailPage } from './admin/orgs/OrgDetailPage';
import { OrgsPage } from './admin/orgs/OrgsPage';
import { RequireAdmin, RequirePermission } from './admin/RequireAdmin';
import { UsersPage } from './admin/users/UsersPage';
import { createQueryClient } from './api/queryClient';
import { PasswordChangePage } from './auth/PasswordChangePage';
import { CHANGE_PASSWORD_PATH, RequireAuth } from './auth/RequireAuth';
import { SignInPage } from './auth/SignInPage';
import { HomePage } from './home/HomePage';
import { Shell } from './shell/Shell';
import { theme } from './theme';
import { WalletPage } from './wallet/WalletPage';

export function AppProviders({ client, children }: { client: QueryClient; children: ReactNode }) {
  return (
    <MantineProvider theme={theme}>
      <QueryClientProvider client={client}>{children}</QueryClientProvider>
    </MantineProvider>
  );
}

export function AppRoutes() {
  return (
    <Routes>
      <Route path="/sign-in" element={<SignInPage />} />
      <Route element={<RequireAuth />}>
        <Route path={CHANGE_PASSWORD_PATH} element={<PasswordChangePage />} />
        <Route element={<Shell />}>
          <Route index element={<HomePage />} />
          <Route path="wallet" element={<WalletPage />} />
          <Route path="admin" element={<RequireAdmin />}>
            <Route index element={<Navigate to="orgs" replace />} />
            <Route path="orgs" element={<OrgsPage />} />
            <Route path="orgs/:orgId" element={<OrgDetailPage />} />
            <Route path="groups" element={<GroupsPage />} />
            <Route path="groups/:groupId" element={<GroupDetailPage />} />
            <Route path="users" element={<UsersPage />} />
            <Route path="credits" element={<CreditsPage />} />
            <Route path="credits/wallets/:walletId" element={<WalletDetailPage />} />
            <Route element={<RequirePermission allowed={(can) => can.canManageClusters} />}>
              <Route path="clusters" element={<ClustersPage />} />
              <Route path="clusters/:clusterId" element={<ClusterDetailPage />} />
            </Route>
            <Route path="audit" element={<AuditPage />} />
          </Route>
        </Route>
      </Route>
      <Route path="*" element={<Navigate to="/" replace />} />
    </Routes>
  );
}

export function App() {
  const [client] = useState(() => createQueryClient());
  return (
    <AppProviders client={client}>
      <BrowserRouter>
        <AppRoutes />
      </BrowserRouter>
    </AppProviders>
  );
}
