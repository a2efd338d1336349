import { Box, List, Progress, Text } from '@mantine/core';
import { usePasswordCheck } from '../api/hooks/auth';
import { errorMessage } from '../api/errors';
import { PASSWORD_MAX_LENGTH } from '../api/keys';

const LEVELS = [
  { label: 'Very weak', color: 'red' },
  { label: 'Weak', color: 'orange' },
  { label: 'Fair', color: 'yellow' },
  { label: 'Good', color: 'teal' },
  { label: 'Strong', color: 'green' },
] as const;

interface PasswordStrengthProps {
  password: string;
  email?: string;
  name?: string;
}

/** Live verdict from the server's password checker for the password being typed. */
export function PasswordStrength({ password, email, name }: PasswordStrengthProps) {
  const check = usePasswordCheck(password, { email, name });
  if (!password) return null;
  if (password.length > PASSWORD_MAX_LENGTH) {
    return (
      <Text size="xs" c="red" aria-live="polite">
        Use at most {PASSWORD_MAX_LENGTH} characters.
      </Text>
    );
  }

  const verdict = check.data;
  if (!verdict) {
    return (
      <Text size="xs" c={check.isError ? 'red' : 'dimmed'} aria-live="polite">
        {check.isError ? `Could not check the password's strength: ${errorMessage(check.error)}` : 'Checking strength…'}
      </Text>
    );
  }

  const score = Math.max(0, Math.min(4, verdict.score));
  const level = LEVELS[score];
  return (
    <Box aria-live="polite" data-testid="password-strength">
      <Progress
        value={(score + 1) * 20}
        color={level.color}
        size="sm"
        aria-label="Password strength"
        style={{ opacity: check.settled ? 1 : 0.6 }}
      />
      <Text size="xs" mt={4}>
        Strength: <strong>{level.label}</strong>
        {verdict.acceptable ? '' : ' — not accepted yet'}
      </Text>
      {password.length < verdict.min_length && !verdict.warning.includes(String(verdict.min_length)) && (
        <Text size="xs" c="dimmed">
          Use at least {verdict.min_length} characters.
        </Text>
      )}
      {verdict.warning && (
        <Text size="xs" c="orange">
          {verdict.warning}
        </Text>
      )}
      {verdict.suggestions.length > 0 && (
        <List size="xs" c="dimmed">
          {verdict.suggestions.map((suggestion) => (
            <List.Item key={suggestion}>{suggestion}</List.Item>
          ))}
        </List>
      )}
    </Box>
  );
}
