/** What the sign-in and password forms hold, and the schemas that say what they may hold. */
import { z } from 'zod';
import { PASSWORD_MAX_LENGTH } from '../api/keys';
import { validateWith } from '../ui/form';

/** The server's bound on an email as typed (identity/schemas.py: LoginRequest). */
export const EMAIL_MAX = 320;

const tooLong = (max: number) => `Use at most ${max.toLocaleString('en')} characters.`;

/** Characters as the server counts them (code points), not UTF-16 units. */
const characters = (value: string) => [...value].length;

/** A password: required (with `empty` as the message), at most what the server takes, never trimmed. */
export function passwordText(empty: string) {
  return z
    .string()
    .refine((value) => value.length > 0, { error: empty })
    .refine((value) => characters(value) <= PASSWORD_MAX_LENGTH, { error: tooLong(PASSWORD_MAX_LENGTH) });
}

export type SignInValues = { email: string; password: string };

export const signInSchema = z.object({
  email: z
    .string()
    .trim()
    .refine((value) => value.length > 0, { error: 'Enter your email.' })
    .refine((value) => characters(value) <= EMAIL_MAX, { error: tooLong(EMAIL_MAX) }),
  password: passwordText('Enter your password.'),
});
export const validateSignIn = validateWith(signInSchema);

export type PasswordChangeValues = { current: string; next: string; confirm: string };

export const passwordChangeSchema = z
  .object({
    current: passwordText('Enter your current password.'),
    next: passwordText('Choose a new password.'),
    confirm: z.string().refine((value) => value.length > 0, { error: 'Repeat the new password.' }),
  })
  .refine((values) => !values.confirm || values.confirm === values.next, {
    error: 'Passwords do not match.',
    path: ['confirm'],
  });
export const validatePasswordChange = validateWith(passwordChangeSchema);

/** The server's request field paths, as the password change form's fields. */
export const PASSWORD_CHANGE_FIELDS: Record<string, keyof PasswordChangeValues> = {
  current_password: 'current',
  new_password: 'next',
};
