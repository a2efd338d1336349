import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { emptyPage, makeMe, SUPER_ADMIN } from '../test/fixtures';
import { json, stubFetch } from '../test/fetchStub';
import { renderApp } from '../test/render';

describe('home page', () => {
  it('points a super admin outside any group to admin mode', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      'GET /api/v1/orgs': json(200, emptyPage),
    });
    renderApp('/');
    const user = userEvent.setup();

    expect(await screen.findByRole('heading', { name: /Welcome/ })).toBeInTheDocument();
    expect(screen.queryByText(/Ask an administrator/)).not.toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Open admin mode' }));

    expect(await screen.findByRole('heading', { name: 'Organizations' })).toBeInTheDocument();
    expect(screen.getByRole('switch', { name: 'Admin mode' })).toBeChecked();
  });

  it('tells a user outside any group to ask an administrator', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    renderApp('/');

    expect(await screen.findByText(/Ask an administrator to add you/)).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Open admin mode' })).not.toBeInTheDocument();
  });
});
