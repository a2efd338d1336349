import { Alert, Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconArrowLeft, IconCheck } from '@tabler/icons-react';
import { useEffect, useRef, useState } from 'react';
import { errorMessage } from '../../api/errors';
import { useWallet } from '../../api/hooks/wallets';
import { newIdempotencyKey, outcomeUnknown } from '../../api/idempotency';
import { formatAmount, formatCredits } from '../../ui/amount';
import { serverErrors, validateWith } from '../../ui/form';
import { creditRequest, creditSchema as creditSchemaFor, MEMO_MAX, type CreditLimits, type CreditValues } from './creditActionForm';

export { MEMO_MAX };

/** One money action: what the form asks, how to confirm it, and how to send it. */
export interface CreditAction {
  title: string;
  /** Shown above the form: which wallets are involved. */
  summary?: string;
  amountHint?: string;
  initialAmount?: string;
  /** Zero is allowed where it means "none" (a monthly grant). */
  allowZero?: boolean;
  /**
   * The wallet the credits leave: no more than it has available can move (the server refuses
   * it with a 409). Re-read while the dialog is open, since others may move credits meanwhile.
   */
  source?: { walletId: string; ownerName: string; available: string };
  withMemo?: boolean;
  question: (amount: string, memo: string | null) => string;
  submit: (amount: string, memo: string | null, idempotencyKey: string) => Promise<unknown>;
  done: (amount: string, memo: string | null) => string;
}

interface CreditActionModalProps {
  action: CreditAction | null;
  onClose: () => void;
  onDone: (message: string) => void;
}

interface Attempt {
  fingerprint: string;
  key: string;
}

/** Reports what the source wallet has available now (refreshed as its query is). */
function AvailableNow({ walletId, onRead }: { walletId: string; onRead: (available: string) => void }) {
  const available = useWallet(walletId).data?.available;
  useEffect(() => {
    if (available !== undefined) onRead(available);
  }, [available, onRead]);
  return null;
}

const FIELDS = ['amount', 'memo'];

/**
 * Form, then confirmation, then submission. One idempotency key belongs to one
 * intended action (amount and memo): going back without changes, or retrying
 * after an answer that never came, reuses it so the server applies it once.
 */
export function CreditActionModal({ action, onClose, onDone }: CreditActionModalProps) {
  const [step, setStep] = useState<'form' | 'confirm'>('form');
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [ready, setReady] = useState<{ amount: string; memo: string | null } | null>(null);
  const [available, setAvailable] = useState<string | null>(null);
  const attempt = useRef<Attempt | null>(null);

  const source = action?.source;
  const availableNow = available ?? source?.available;
  const limits: CreditLimits = {
    allowZero: action?.allowZero,
    atMost:
      source && availableNow !== undefined
        ? { amount: availableNow, message: `${source.ownerName} has ${formatCredits(availableNow)} available.` }
        : undefined,
  };
  // The schema follows the action and what the source has now; validate reads it when called.
  const current = useRef(limits);
  current.current = limits;
  const form = useForm<CreditValues>({
    initialValues: { amount: '', memo: '' },
    validate: (values) => validateWith(creditSchemaFor(current.current))(values),
  });
  const latestForm = useRef(form);
  latestForm.current = form;

  useEffect(() => {
    // A newly opened action starts blank, with no key.
    const values = { amount: action?.initialAmount ?? '', memo: '' };
    latestForm.current.setInitialValues(values);
    latestForm.current.setValues(values);
    latestForm.current.clearErrors();
    setStep('form');
    setProblem(null);
    setReady(null);
    setAvailable(null);
    attempt.current = null;
  }, [action]);

  const close = () => {
    if (!busy) onClose();
  };

  const review = (values: CreditValues) => {
    if (!action) return;
    const checked = creditRequest(values, current.current, Boolean(action.withMemo));
    const fingerprint = JSON.stringify([checked.amount, checked.memo]);
    if (attempt.current?.fingerprint !== fingerprint) attempt.current = { fingerprint, key: newIdempotencyKey() };
    setProblem(null);
    setReady(checked);
    setStep('confirm');
  };

  const confirm = async () => {
    if (!action || !ready) return;
    attempt.current ??= { fingerprint: JSON.stringify([ready.amount, ready.memo]), key: newIdempotencyKey() };
    setBusy(true);
    setProblem(null);
    try {
      await action.submit(ready.amount, ready.memo, attempt.current.key);
      onDone(action.done(ready.amount, ready.memo));
      onClose();
    } catch (error) {
      // A refusal that names the amount or the memo goes back to that field.
      const { onFields, rest } = serverErrors(error, {}, FIELDS);
      if (Object.keys(onFields).length > 0) {
        form.setErrors(onFields);
        setStep('form');
      }
      setProblem(rest ?? (Object.keys(onFields).length ? null : errorMessage(error)));
      // After a clear refusal nothing happened: trying again is a new action.
      if (!outcomeUnknown(error)) attempt.current = null;
    } finally {
      setBusy(false);
    }
  };

  const back = () => {
    setProblem(null);
    setStep('form');
  };

  return (
    <Modal opened={action !== null} onClose={close} title={action?.title} centered>
      {source && <AvailableNow walletId={source.walletId} onRead={setAvailable} />}
      {action && step === 'form' && (
        <form onSubmit={form.onSubmit(review)} noValidate>
          <Stack>
            {action.summary && (
              <Text size="sm" c="dimmed">
                {action.summary}
              </Text>
            )}
            <TextInput
              label="Amount"
              description={
                source && availableNow !== undefined
                  ? `${formatAmount(availableNow)} available in ${source.ownerName}.`
                  : action.amountHint
              }
              inputMode="decimal"
              autoComplete="off"
              {...form.getInputProps('amount')}
              data-autofocus
            />
            {action.withMemo && (
              <TextInput
                label="Memo"
                description={`Optional; shown in both wallets' history. Up to ${MEMO_MAX} characters.`}
                {...form.getInputProps('memo')}
              />
            )}
            {problem && (
              <Alert color="red" role="alert">
                {problem}
              </Alert>
            )}
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit">Review</Button>
            </Group>
          </Stack>
        </form>
      )}
      {action && step === 'confirm' && ready && (
        <Stack>
          <Text fw={600}>{action.question(ready.amount, ready.memo)}</Text>
          {ready.memo && (
            <Text size="sm" c="dimmed">
              Memo: {ready.memo}
            </Text>
          )}
          {problem && (
            <Alert color="red" role="alert">
              {problem}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={back} disabled={busy} leftSection={<IconArrowLeft size={16} aria-hidden />}>
              Back
            </Button>
            <Button onClick={() => void confirm()} loading={busy} leftSection={<IconCheck size={16} aria-hidden />}>
              Confirm
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
