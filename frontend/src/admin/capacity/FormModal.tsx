import { Alert, Button, Group, Modal, Stack } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { errorMessage } from '../../api/errors';

interface FormModalProps {
  opened: boolean;
  onClose: () => void;
  title: string;
  submitLabel: string;
  /** Returns a problem to show instead of sending, or runs the change (its error is shown). */
  onSubmit: () => string | Promise<unknown>;
  /** Extra buttons beside Cancel (a reset, say). */
  extra?: ReactNode;
  children: ReactNode;
}

/** A small form in a dialog: checks, sends, shows why it failed, closes when done. */
export function FormModal({ opened, onClose, title, submitLabel, onSubmit, extra, children }: FormModalProps) {
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const close = () => {
    if (busy) return;
    setProblem(null);
    onClose();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    const outcome = onSubmit();
    if (typeof outcome === 'string') {
      setProblem(outcome);
      return;
    }
    setBusy(true);
    try {
      await outcome;
      setBusy(false);
      setProblem(null);
      onClose();
    } catch (err) {
      setBusy(false);
      setProblem(errorMessage(err));
    }
  };

  return (
    <Modal opened={opened} onClose={close} title={title} centered>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <Stack>{children}</Stack>
        {problem && (
          <Alert color="red" mt="md" role="alert">
            {problem}
          </Alert>
        )}
        <Group justify="flex-end" mt="lg">
          {extra}
          <Button variant="default" onClick={close} disabled={busy}>
            Cancel
          </Button>
          <Button type="submit" loading={busy}>
            {submitLabel}
          </Button>
        </Group>
      </form>
    </Modal>
  );
}
