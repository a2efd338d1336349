import { Alert, List, Paper, SimpleGrid, Stack, Text } from '@mantine/core';
import type { useLedgerCheck } from '../../api/hooks/credits';
import { Amount } from '../../ui/Amount';
import { countOf, formatDateTime } from '../../ui/format';
import { QueryState } from '../../ui/QueryState';

function Total({ label, value }: { label: string; value: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600} style={{ fontVariantNumeric: 'tabular-nums' }}>
        <Amount value={value} />
      </Text>
    </div>
  );
}

/** The answer of the last ledger check, once one was asked for. */
export function LedgerCheckResult({ check }: { check: ReturnType<typeof useLedgerCheck> }) {
  const asked = check.fetchStatus === 'fetching' || check.data !== undefined || check.error !== null;
  if (!asked) return null;
  const report = check.data;
  return (
    <Paper withBorder p="md" radius="md" role="region" aria-label="Ledger check">
      {/* A check runs on demand: it is loading while fetching, not while never asked. */}
      <QueryState query={{ isPending: check.isFetching, error: check.error, refetch: check.refetch }}>
        {report && (
          <Stack gap="sm">
            {report.ok ? (
              <Alert color="green" title="The ledger is consistent" role="status">
                Every check passed.
              </Alert>
            ) : (
              <Alert
                color="red"
                title={`The ledger check found ${countOf(report.violations.length, 'problem')}`}
              >
                <List size="sm">
                  {report.violations.map((violation, index) => (
                    <List.Item key={`${violation.invariant}-${index}`}>
                      <Text span fw={600} size="sm">
                        {violation.invariant}
                      </Text>
                      : {violation.detail}
                    </List.Item>
                  ))}
                </List>
              </Alert>
            )}
            <SimpleGrid cols={{ base: 2, sm: 4 }}>
              <Total label="Minted" value={report.minted} />
              <Total label="In wallets" value={report.in_wallets} />
              <Total label="Held" value={report.held} />
              <Total label="Consumed" value={report.consumed} />
            </SimpleGrid>
            {report.not_checked.length > 0 && (
              <Text size="xs" c="dimmed">
                Not checked yet: {report.not_checked.join('; ')}.
              </Text>
            )}
            <Text size="xs" c="dimmed">
              Checked {formatDateTime(report.checked_at)}
            </Text>
          </Stack>
        )}
      </QueryState>
    </Paper>
  );
}
