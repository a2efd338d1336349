import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../test/renderUi';
import { makeVolume } from './testData';
import { VolumeTable } from './VolumeTable';

const volumes = [
  makeVolume({ id: 'v-home', name: 'home-s1', size_gib: 10, used_by: [{ session_id: 's1', name: 'notebook', state: 'running' }] }),
  makeVolume({ id: 'v-data', kind: 'shared', name: 'datasets', size_gib: 500, access_mode: 'ReadOnlyMany' }),
  makeVolume({ id: 'v-scratch', kind: 'shared', name: 'scratch', access_mode: 'ReadWriteMany' }),
];

describe('volume table', () => {
  it('shows each volume with its size, access and users, and the actions it is given', () => {
    renderUi(<VolumeTable volumes={volumes} label="Volumes" minWidth={760} actions={(v) => <button>Act on {v.name}</button>} />);

    const table = screen.getByRole('table', { name: 'Volumes' });
    expect(within(table).getAllByRole('columnheader').map((th) => th.textContent)).toEqual([
      'Name',
      'Size',
      'Access',
      'Used by',
      'Created',
      '',
    ]);
    const home = within(table).getByText('home-s1').closest('tr')!;
    expect(home).toHaveTextContent('10 GiB');
    expect(home).toHaveTextContent('Read-write');
    expect(within(home).getByText('notebook')).toBeInTheDocument();
    expect(within(home).queryByRole('link')).not.toBeInTheDocument();
    expect(within(home).getByRole('button', { name: 'Act on home-s1' })).toBeInTheDocument();
    expect(within(table).getByText('datasets').closest('tr')!).toHaveTextContent('Read-only');
    expect(within(table).getByText('scratch').closest('tr')!).toHaveTextContent('Read-write');
  });

  it('adds a Kind column and links users to their sessions when asked', () => {
    renderUi(
      <VolumeTable
        volumes={volumes}
        label="Volumes"
        minWidth={860}
        kind={(v) => (v.kind === 'home' ? 'Home' : 'Shared')}
        linkUsers
        actions={() => null}
      />,
    );

    const table = screen.getByRole('table', { name: 'Volumes' });
    expect(within(table).getByRole('columnheader', { name: 'Kind' })).toBeInTheDocument();
    const home = within(table).getByText('home-s1').closest('tr')!;
    expect(home).toHaveTextContent('Home');
    expect(within(home).getByRole('link', { name: 'notebook' })).toHaveAttribute('href', '/sessions/s1');
    expect(within(table).getByText('datasets').closest('tr')!).toHaveTextContent('Shared');
  });
});
