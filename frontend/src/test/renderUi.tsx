import { render } from '@testing-library/react';
import type { ReactNode } from 'react';
import { MemoryRouter } from 'react-router';
import { AppProviders } from '../App';
import { createQueryClient } from '../api/queryClient';

/** Renders one component with the console's providers, at `path`. */
export function renderUi(ui: ReactNode, path = '/') {
  const client = createQueryClient({ retry: false });
  return render(
    <AppProviders client={client}>
      <MemoryRouter initialEntries={[path]}>{ui}</MemoryRouter>
    </AppProviders>,
  );
}
