import { describe, expect, it } from 'vitest';
import { validatePasswordChange, validateSignIn, type PasswordChangeValues } from './authForms';

describe('the sign-in schema', () => {
  it('takes an email and a password as typed', () => {
    expect(validateSignIn({ email: ' ada@example.org ', password: ' spaces count ' })).toEqual({});
  });

  it('names each missing field', () => {
    expect(validateSignIn({ email: '   ', password: '' })).toEqual({
      email: 'Enter your email.',
      password: 'Enter your password.',
    });
  });

  it('refuses what the server would refuse before sending it', () => {
    expect(validateSignIn({ email: `${'a'.repeat(310)}@example.org`, password: 'x' })).toEqual({
      email: 'Use at most 320 characters.',
    });
    expect(validateSignIn({ email: 'ada@example.org', password: 'p'.repeat(1025) })).toEqual({
      password: 'Use at most 1,024 characters.',
    });
    // Counted in characters, as the server counts them: 1,024 emoji are 2,048 UTF-16 units.
    expect(validateSignIn({ email: 'ada@example.org', password: '🔑'.repeat(1024) })).toEqual({});
  });
});

describe('the password change schema', () => {
  const good: PasswordChangeValues = { current: 'old', next: 'violet tractor', confirm: 'violet tractor' };
  const errors = (change: Partial<PasswordChangeValues>) => validatePasswordChange({ ...good, ...change });

  it('takes matching passwords', () => {
    expect(errors({})).toEqual({});
  });

  it('names each missing field', () => {
    expect(errors({ current: '', next: '', confirm: '' })).toEqual({
      current: 'Enter your current password.',
      next: 'Choose a new password.',
      confirm: 'Repeat the new password.',
    });
  });

  it('refuses a confirmation that differs, even by a space', () => {
    expect(errors({ confirm: 'violet tractor ' })).toEqual({ confirm: 'Passwords do not match.' });
  });

  it('refuses a new password longer than the server takes', () => {
    const long = 'n'.repeat(1025);
    expect(errors({ next: long, confirm: long })).toEqual({ next: 'Use at most 1,024 characters.' });
  });
});
