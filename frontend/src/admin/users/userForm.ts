/** What the new-user and password-reset forms hold, and the schemas that say what they may hold. */
import { z } from 'zod';
import type { MembershipRole } from '../../api/types';
import { EMAIL_MAX, passwordText } from '../../auth/authForms';
import { textUpTo, validateWith } from '../../ui/form';

/** The server's bound on a person's name (identity/schemas.py: PersonName). */
export const PERSON_NAME_MAX = 200;

export type NewUserValues = {
  email: string;
  name: string;
  password: string;
  groupId: string | null;
  role: MembershipRole;
};

export const NEW_USER: NewUserValues = { email: '', name: '', password: '', groupId: null, role: 'member' };

/** What the server takes as an email (identity/schemas.py: _email), checked on the trimmed text. */
function looksLikeEmail(value: string): boolean {
  const [local, domain, ...rest] = value.split('@');
  return rest.length === 0 && !!local && !!domain && domain.includes('.') && !domain.startsWith('.') && !/\s/.test(value);
}

/** `mustPickGroup`: the admin may create users only inside a group they administer. */
export function newUserSchema({ mustPickGroup }: { mustPickGroup: boolean }) {
  return z.object({
    email: z
      .string()
      .trim()
      .refine((value) => value.length > 0, { error: 'Enter an email address.' })
      .refine((value) => [...value].length <= EMAIL_MAX, { error: `Use at most ${EMAIL_MAX} characters.` })
      .refine((value) => !value || looksLikeEmail(value), { error: 'Enter an email address such as ada@example.org.' }),
    name: textUpTo(PERSON_NAME_MAX, { required: true, label: 'A name' }),
    password: passwordText('Enter an initial password.'),
    groupId: z
      .string()
      .nullable()
      .refine((value) => !mustPickGroup || value !== null, { error: 'Choose a group you administer for the new user.' }),
  });
}

export const validateNewUser = (options: { mustPickGroup: boolean }) => validateWith(newUserSchema(options));

/** The server's request field paths, as the new-user form's fields. */
export const NEW_USER_FIELDS: Record<string, keyof NewUserValues> = {
  email: 'email',
  name: 'name',
  initial_password: 'password',
  group_id: 'groupId',
  role: 'role',
};

/** The request, trimmed as the server would; the role only with a group. */
export function newUserRequest(values: NewUserValues) {
  return {
    email: values.email.trim(),
    name: values.name.trim(),
    initial_password: values.password,
    group_id: values.groupId,
    role: values.groupId ? values.role : null,
  };
}

export type ResetValues = { password: string };

export const validateReset = validateWith(z.object({ password: passwordText('Enter a new initial password.') }));
