import { PasswordInput, type PasswordInputProps } from '@mantine/core';

/**
 * Mantine labels its show/hide toggle "Toggle password visibility", which makes
 * label-based lookups for "Password" ambiguous; this toggle is named neutrally.
 */
export function SecretInput(props: PasswordInputProps) {
  return <PasswordInput {...props} visibilityToggleButtonProps={{ 'aria-label': 'Show characters' }} />;
}
