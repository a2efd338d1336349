import { render } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { AppProviders, AppRoutes } from '../App';
import { createQueryClient } from '../api/queryClient';

/** Renders the whole console at `path`, with retries off so errors show at once. */
export function renderApp(path = '/') {
  const client = createQueryClient({ retry: false });
  const result = render(
    <AppProviders client={client}>
      <MemoryRouter initialEntries={[path]}>
        <AppRoutes />
      </MemoryRouter>
    </AppProviders>,
  );
  return { ...result, client };
}
