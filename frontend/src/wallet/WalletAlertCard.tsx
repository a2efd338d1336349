import { Button, Group, NumberInput, Paper, Stack, Text, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useEffect } from 'react';
import { z } from 'zod';
import { useSetWalletAlert, useWalletAlert } from '../api/hooks/wallets';
import type { WalletAlertOut, WalletAlertRequest } from '../api/types';
import { formatDateTime } from '../ui/format';
import { amountText, asNumber, numberIn, serverErrors, validateWith } from '../ui/form';
import { notifyDone } from '../ui/notify';

/** The longest runway one can ask to be told of (the server's bound): a year. */
export const MOST_RUNWAY_HOURS = 24 * 366;
const RUNWAY = { min: 1, max: MOST_RUNWAY_HOURS, integer: true, unit: 'hours' };

interface AlertValues {
  below: string;
  runway: number | string;
}

const schema = z.object({
  below: z.union([z.literal(''), amountText({ allowZero: true })]),
  runway: z.union([z.literal(''), numberIn(RUNWAY)]),
});

function valuesOf(alert: WalletAlertOut | undefined): AlertValues {
  return { below: alert?.below ?? '', runway: alert?.runway_hours ?? '' };
}

function Status({ alert, personal }: { alert: WalletAlertOut; personal: boolean }) {
  const told = [alert.below_told_at, alert.runway_told_at].filter((at): at is string => Boolean(at));
  return (
    <Stack gap={2}>
      {personal && (
        <Text size="sm" c="dimmed">
          {alert.runway_now_hours === null
            ? 'Nothing is billed now.'
            : `At the rate billed now the balance lasts about ${Math.floor(alert.runway_now_hours).toLocaleString()} hours.`}
        </Text>
      )}
      {told.length > 0 && (
        <Text size="sm" c="orange">
          Told on {formatDateTime(told.sort()[0])}; told again only after the wallet is back above.
        </Text>
      )}
    </Stack>
  );
}

/**
 * A wallet's low-credit alert: a notification once when its balance falls below an amount or
 * (personal wallets, which sessions bill) lasts fewer hours than a number at the rate billed
 * now; for a group's or organization's wallet the notification goes to its admins.
 */
export function WalletAlertCard({ walletId, personal }: { walletId: string; personal: boolean }) {
  const alert = useWalletAlert(walletId);
  const save = useSetWalletAlert();
  const form = useForm<AlertValues>({ initialValues: valuesOf(undefined), validate: validateWith(schema) });
  const loaded = alert.data;
  useEffect(() => {
    if (loaded) form.setValues(valuesOf(loaded));
    // Only when the stored alert changes: typing must not be overwritten.
  }, [loaded?.set_at, loaded?.below, loaded?.runway_hours]);

  /** Saves what was typed; null removes the alert. */
  const send = async (values: AlertValues | null) => {
    const checked = values ? schema.parse(values) : { below: '', runway: '' };
    const body: WalletAlertRequest = {
      below: checked.below === '' ? null : checked.below,
      runway_hours: checked.runway === '' ? null : asNumber(checked.runway),
    };
    try {
      await save.mutateAsync({ walletId, body });
      notifyDone(body.below === null && body.runway_hours === null ? 'Alert removed.' : 'Alert saved.');
    } catch (err) {
      const { onFields, rest } = serverErrors(err, { below: 'below', runway_hours: 'runway' }, ['below', 'runway']);
      form.setErrors({ ...onFields, ...(rest ? { below: rest } : {}) });
    }
  };

  return (
    <Paper withBorder p="md" radius="md" role="group" aria-label="Low-credit alert">
      <Text size="sm" c="dimmed" mb={4}>
        Low-credit alert
      </Text>
      <form onSubmit={form.onSubmit((values) => void send(values))}>
        <Stack gap="xs">
          <Group grow align="flex-start">
            <TextInput
              label="Tell when the balance falls below"
              description="Credits; empty: no balance alert"
              {...form.getInputProps('below')}
            />
            {personal && (
              <NumberInput
                label="Or lasts fewer hours than"
                description="At the rate billed now; empty: none"
                {...form.getInputProps('runway')}
                min={RUNWAY.min}
                max={RUNWAY.max}
                clampBehavior="none"
                allowDecimal={false}
              />
            )}
          </Group>
          {loaded && <Status alert={loaded} personal={personal} />}
          <Group gap="xs">
            <Button type="submit" size="xs" loading={save.isPending}>
              Save alert
            </Button>
            {loaded?.set_at && (
              <Button size="xs" variant="default" onClick={() => void send(null)} disabled={save.isPending}>
                Remove alert
              </Button>
            )}
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
