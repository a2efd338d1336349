import { describe, expect, it } from 'vitest';
import { NEW_USER, newUserRequest, validateNewUser, validateReset, type NewUserValues } from './userForm';

const good: NewUserValues = { ...NEW_USER, email: 'ada@example.org', name: 'Ada Lovelace', password: 'initial-pass' };
const errors = (change: Partial<NewUserValues>, mustPickGroup = false) =>
  validateNewUser({ mustPickGroup })({ ...good, ...change });

describe('the new-user schema', () => {
  it('takes a user within every bound', () => {
    expect(errors({})).toEqual({});
    expect(errors({ name: 'n'.repeat(200), email: ` ${'a'.repeat(300)}@example.org ` })).toEqual({});
  });

  it('names each missing field', () => {
    expect(errors({ email: ' ', name: ' ', password: '' })).toEqual({
      email: 'Enter an email address.',
      name: 'A name is required.',
      password: 'Enter an initial password.',
    });
  });

  it('refuses what the server would refuse', () => {
    for (const email of ['ada', 'ada@', '@example.org', 'ada@example', 'ada@.org', 'a da@example.org', 'a@b@c.org']) {
      expect(errors({ email })).toEqual({ email: 'Enter an email address such as ada@example.org.' });
    }
    expect(errors({ email: `${'a'.repeat(320)}@example.org` })).toEqual({ email: 'Use at most 320 characters.' });
    expect(errors({ name: 'n'.repeat(201) })).toEqual({ name: 'Use at most 200 characters.' });
    expect(errors({ name: 'Ada\u0000' })).toEqual({ name: 'Use no control or invisible characters.' });
    expect(errors({ password: 'p'.repeat(1025) })).toEqual({ password: 'Use at most 1,024 characters.' });
  });

  it('asks for a group only of an admin who must pick one', () => {
    expect(errors({ groupId: null }, false)).toEqual({});
    expect(errors({ groupId: null }, true)).toEqual({ groupId: 'Choose a group you administer for the new user.' });
    expect(errors({ groupId: 'g-1' }, true)).toEqual({});
  });

  it('sends the role only with a group, and trims', () => {
    expect(newUserRequest({ ...good, email: ' ada@example.org ', name: ' Ada ', role: 'guest' })).toEqual({
      email: 'ada@example.org',
      name: 'Ada',
      initial_password: 'initial-pass',
      group_id: null,
      role: null,
    });
    expect(newUserRequest({ ...good, groupId: 'g-1', role: 'guest' })).toMatchObject({ group_id: 'g-1', role: 'guest' });
  });
});

describe('the password reset schema', () => {
  it('asks for a password the server would take', () => {
    expect(validateReset({ password: ' padded ' })).toEqual({});
    expect(validateReset({ password: '' })).toEqual({ password: 'Enter a new initial password.' });
    expect(validateReset({ password: 'p'.repeat(1025) })).toEqual({ password: 'Use at most 1,024 characters.' });
  });
});
