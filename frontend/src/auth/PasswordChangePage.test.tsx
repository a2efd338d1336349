import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { makeMe } from '../test/fixtures';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { renderApp } from '../test/render';

const forcedMe = makeMe({ must_change_password: true, csrf_token: 'csrf-forced' });

const weakVerdict = {
  acceptable: false,
  score: 1,
  warning: 'This is similar to a commonly used password.',
  suggestions: ['Add another word or two.'],
  min_length: 12,
};

describe('forced password change', () => {
  it('redirects there, shows the live verdict and blocks a mismatched confirmation', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, forcedMe),
      'POST /api/v1/auth/password-check': json(200, weakVerdict),
    });
    renderApp('/');
    const user = userEvent.setup();

    expect(await screen.findByRole('heading', { name: 'Change your password' })).toBeInTheDocument();
    await user.type(screen.getByLabelText('Current password'), 'initial-pass');
    await user.type(screen.getByLabelText('New password'), 'password1');

    expect(await screen.findByText('This is similar to a commonly used password.')).toBeInTheDocument();
    expect(screen.getByText('Add another word or two.')).toBeInTheDocument();
    expect(screen.getByText('Weak')).toBeInTheDocument();
    expect(screen.getByLabelText('Password strength')).toBeInTheDocument();
    const check = api.callsTo('POST', '/api/v1/auth/password-check').at(-1)!;
    expect(check.body).toMatchObject({ password: 'password1', email: 'ada@example.org' });
    expect(check.headers.get('X-CSRF-Token')).toBe('csrf-forced');

    await user.type(screen.getByLabelText('Confirm new password'), 'password2');
    await user.click(screen.getByRole('button', { name: 'Change password' }));

    expect(screen.getByText('Passwords do not match.')).toBeInTheDocument();
    expect(api.callsTo('POST', '/api/v1/auth/password')).toHaveLength(0);
  });

  it('changes the password with the CSRF token and lands on the home page', async () => {
    const api = stubFetch({
      'GET /api/v1/me': json(200, forcedMe),
      'POST /api/v1/auth/password-check': json(200, { ...weakVerdict, acceptable: true, score: 4, warning: '', suggestions: [] }),
      'POST /api/v1/auth/password': json(200, makeMe({ csrf_token: 'csrf-after' })),
    });
    renderApp('/change-password');
    const user = userEvent.setup();

    await user.type(await screen.findByLabelText('Current password'), 'initial-pass');
    await user.type(screen.getByLabelText('New password'), 'violet tractor singing loudly');
    await user.type(screen.getByLabelText('Confirm new password'), 'violet tractor singing loudly');
    await user.click(screen.getByRole('button', { name: 'Change password' }));

    expect(await screen.findByRole('heading', { name: /Welcome/ })).toBeInTheDocument();
    const [change] = api.callsTo('POST', '/api/v1/auth/password');
    expect(change.body).toEqual({ current_password: 'initial-pass', new_password: 'violet tractor singing loudly' });
    expect(change.headers.get('X-CSRF-Token')).toBe('csrf-forced');
  });

  it('shows why the server rejected the new password', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, forcedMe),
      'POST /api/v1/auth/password-check': json(200, weakVerdict),
      'POST /api/v1/auth/password': apiError(400, 'password_rejected', 'Choose a longer password.'),
    });
    renderApp('/change-password');
    const user = userEvent.setup();

    await user.type(await screen.findByLabelText('Current password'), 'initial-pass');
    await user.type(screen.getByLabelText('New password'), 'short');
    await user.type(screen.getByLabelText('Confirm new password'), 'short');
    await user.click(screen.getByRole('button', { name: 'Change password' }));

    await waitFor(() => expect(screen.getByRole('alert')).toHaveTextContent('Choose a longer password.'));
  });

  it('sends any screen to the password change when the server demands it', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [{ role: 'super_admin', org_id: null, group_id: null, org_name: null, group_name: null }])),
      'GET /api/v1/orgs': apiError(403, 'password_change_required', 'Change your password first.'),
    });
    renderApp('/admin/orgs');

    expect(await screen.findByRole('heading', { name: 'Change your password' })).toBeInTheDocument();
  });
});
