import { Alert, Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { errorMessage } from '../../api/errors';
import { newIdempotencyKey, outcomeUnknown } from '../../api/idempotency';
import { parseAmount, toMicros } from '../../ui/amount';

/** The server's bound on a memo (TransferRequest, MintRequest). */
export const MEMO_MAX = 500;

/** One money action: what the form asks, how to confirm it, and how to send it. */
export interface CreditAction {
  title: string;
  /** Shown above the form: which wallets are involved. */
  summary?: string;
  amountHint?: string;
  initialAmount?: string;
  /** Zero is allowed where it means "none" (a monthly grant). */
  allowZero?: boolean;
  /** The most that can move (what the source wallet has available), and what to say above it. */
  atMost?: { amount: string; message: string };
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

/**
 * Form, then confirmation, then submission. One idempotency key belongs to one
 * intended action (amount and memo): going back without changes, or retrying
 * after an answer that never came, reuses it so the server applies it once.
 */
export function CreditActionModal({ action, onClose, onDone }: CreditActionModalProps) {
  const [step, setStep] = useState<'form' | 'confirm'>('form');
  const [amountText, setAmountText] = useState('');
  const [memoText, setMemoText] = useState('');
  const [amountError, setAmountError] = useState<string | null>(null);
  const [memoError, setMemoError] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [ready, setReady] = useState<{ amount: string; memo: string | null } | null>(null);
  const attempt = useRef<Attempt | null>(null);

  useEffect(() => {
    // A newly opened action starts blank, with no key.
    setStep('form');
    setAmountText(action?.initialAmount ?? '');
    setMemoText('');
    setAmountError(null);
    setMemoError(null);
    setProblem(null);
    setReady(null);
    attempt.current = null;
  }, [action]);

  const close = () => {
    if (!busy) onClose();
  };

  const review = (event: FormEvent) => {
    event.preventDefault();
    if (!action) return;
    const checked = parseAmount(amountText, { allowZero: action.allowZero });
    if (!checked.ok) {
      setAmountError(checked.error);
      return;
    }
    if (action.atMost && toMicros(checked.value) > toMicros(action.atMost.amount)) {
      setAmountError(`More than can move: ${action.atMost.message}`);
      return;
    }
    const memo = action.withMemo ? memoText.trim() || null : null;
    const memoLength = memo ? [...memo].length : 0; // in characters, as the server counts
    if (memoLength > MEMO_MAX) {
      setMemoError(`Use at most ${MEMO_MAX} characters; this memo has ${memoLength}.`);
      return;
    }
    setMemoError(null);
    const fingerprint = JSON.stringify([checked.value, memo]);
    if (attempt.current?.fingerprint !== fingerprint) attempt.current = { fingerprint, key: newIdempotencyKey() };
    setAmountError(null);
    setProblem(null);
    setReady({ amount: checked.value, memo });
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
      setProblem(errorMessage(error));
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
      {action && step === 'form' && (
        <form onSubmit={review} noValidate>
          <Stack>
            {action.summary && (
              <Text size="sm" c="dimmed">
                {action.summary}
              </Text>
            )}
            <TextInput
              label="Amount"
              description={action.amountHint}
              inputMode="decimal"
              autoComplete="off"
              value={amountText}
              onChange={(event) => setAmountText(event.currentTarget.value)}
              error={amountError}
              data-autofocus
            />
            {action.withMemo && (
              <TextInput
                label="Memo"
                description="Optional; shown in both wallets' history."
                value={memoText}
                onChange={(event) => setMemoText(event.currentTarget.value)}
                error={memoError}
              />
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
            <Button variant="default" onClick={back} disabled={busy}>
              Back
            </Button>
            <Button onClick={() => void confirm()} loading={busy}>
              Confirm
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
