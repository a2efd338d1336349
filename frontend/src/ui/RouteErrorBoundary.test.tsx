import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { json, stubFetch } from '../test/fetchStub';
import { makeMe, SUPER_ADMIN } from '../test/fixtures';
import { renderApp } from '../test/render';
import { renderUi } from '../test/renderUi';
import { RouteErrorBoundary } from './RouteErrorBoundary';

let broken = true;

function Fragile() {
  if (broken) throw new Error('Unexpected answer from the server.');
  return <p>The page works.</p>;
}

describe('RouteErrorBoundary', () => {
  beforeEach(() => {
    broken = true;
    // React reports caught errors to the console; keep the test output clean.
    vi.spyOn(console, 'error').mockImplementation(() => {});
  });
  afterEach(() => vi.restoreAllMocks());

  it('keeps a failing page to itself and lets the user try again', async () => {
    renderUi(
      <>
        <nav>Navigation</nav>
        <RouteErrorBoundary>
          <Fragile />
        </RouteErrorBoundary>
      </>,
    );
    expect(screen.getByRole('alert')).toHaveTextContent('Unexpected answer from the server.');
    expect(screen.getByText('Navigation')).toBeInTheDocument();

    broken = false;
    await userEvent.setup().click(screen.getByRole('button', { name: 'Try again' }));
    expect(screen.getByText('The page works.')).toBeInTheDocument();
  });
});

describe('each route', () => {
  beforeEach(() => vi.spyOn(console, 'error').mockImplementation(() => {}));
  afterEach(() => vi.restoreAllMocks());

  it('fails alone: the shell and its navigation stay usable', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [SUPER_ADMIN])),
      // An answer the page cannot read.
      'GET /api/v1/orgs': json(200, { unexpected: true }),
    });
    renderApp('/admin/orgs');

    expect(await screen.findByText('This page failed')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Users' })).toBeInTheDocument();
    expect(screen.getByRole('switch', { name: 'Admin mode' })).toBeChecked();
  });
});
