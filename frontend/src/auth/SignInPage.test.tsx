import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { makeMe } from '../test/fixtures';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { renderApp } from '../test/render';

describe('sign-in', () => {
  it('sends the credentials and shows the server message on failure', async () => {
    const api = stubFetch({
      'GET /api/v1/me': apiError(401, 'not_authenticated', 'Sign in first.'),
      'POST /api/v1/auth/login': apiError(401, 'invalid_credentials', 'Email or password is wrong.'),
    });
    renderApp('/');
    const user = userEvent.setup();

    await user.type(await screen.findByLabelText('Email'), 'ada@example.org');
    await user.type(screen.getByLabelText('Password'), 'not-it');
    await user.click(screen.getByRole('button', { name: 'Sign in' }));

    expect(await screen.findByRole('alert')).toHaveTextContent('Email or password is wrong.');
    expect(api.callsTo('POST', '/api/v1/auth/login')[0].body).toEqual({
      email: 'ada@example.org',
      password: 'not-it',
    });
  });

  it('asks for both fields before calling the server', async () => {
    const api = stubFetch({ 'GET /api/v1/me': apiError(401, 'not_authenticated', 'Sign in first.') });
    renderApp('/sign-in');
    const user = userEvent.setup();

    await user.click(await screen.findByRole('button', { name: 'Sign in' }));

    // Each field says what it lacks, and nothing is sent.
    expect(await screen.findByText('Enter your email.')).toBeInTheDocument();
    expect(screen.getByText('Enter your password.')).toBeInTheDocument();
    expect(screen.getByLabelText('Email')).toHaveAttribute('aria-invalid', 'true');
    expect(api.callsTo('POST', '/api/v1/auth/login')).toHaveLength(0);
  });

  it('lands on the welcome page after signing in', async () => {
    let signedIn = false;
    const me = makeMe({
      memberships: [
        {
          user_id: '00000000-0000-4000-8000-000000000001',
          user_email: 'ada@example.org',
          user_name: 'Ada Lovelace',
          group_id: '00000000-0000-4000-8000-0000000000a1',
          group_name: 'Vision lab',
          org_id: '00000000-0000-4000-8000-0000000000b1',
          org_name: 'Research',
          role: 'member',
          expires_at: null,
          active: true,
          created_at: '2025-01-01T00:00:00Z',
        },
      ],
    });
    stubFetch({
      'GET /api/v1/me': () => (signedIn ? json(200, me) : apiError(401, 'not_authenticated', 'Sign in first.')),
      'POST /api/v1/auth/login': () => {
        signedIn = true;
        return json(200, { user: me.user, csrf_token: 'csrf-1', must_change_password: false });
      },
    });
    renderApp('/');
    const user = userEvent.setup();

    await user.type(await screen.findByLabelText('Email'), 'ada@example.org');
    await user.type(screen.getByLabelText('Password'), 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Sign in' }));

    expect(await screen.findByRole('heading', { name: /Welcome/ })).toBeInTheDocument();
    expect(screen.getByText('Vision lab')).toBeInTheDocument();
  });

  it('explains rate limiting with the wait time', async () => {
    stubFetch({
      'GET /api/v1/me': apiError(401, 'not_authenticated', 'Sign in first.'),
      'POST /api/v1/auth/login': json(
        429,
        { error: { code: 'too_many_attempts', message: 'Too many sign-in attempts.' } },
        { 'Retry-After': '30' },
      ),
    });
    renderApp('/sign-in');
    const user = userEvent.setup();

    await user.type(await screen.findByLabelText('Email'), 'ada@example.org');
    await user.type(screen.getByLabelText('Password'), 'guess');
    await user.click(screen.getByRole('button', { name: 'Sign in' }));

    expect(await screen.findByRole('alert')).toHaveTextContent('Too many sign-in attempts. Try again in 30 seconds.');
  });
});
