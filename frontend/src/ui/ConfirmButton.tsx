import { Alert, Button, Group, Modal, Text, type ButtonProps } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { errorMessage } from '../api/errors';

interface ConfirmButtonProps extends Omit<ButtonProps, 'children'> {
  label: string;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
}

/** A button that asks before running a destructive action, and shows why it failed. */
export function ConfirmButton({ label, title, message, confirmLabel, onConfirm, color = 'red', ...buttonProps }: ConfirmButtonProps) {
  const [opened, setOpened] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const close = () => {
    if (busy) return;
    setOpened(false);
    setError(null);
  };

  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setOpened(false);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Button size="xs" variant="light" color={color} {...buttonProps} onClick={() => setOpened(true)}>
        {label}
      </Button>
      <Modal opened={opened} onClose={close} title={title} centered>
        <Text size="sm">{message}</Text>
        {error && (
          <Alert color="red" mt="md" role="alert">
            {error}
          </Alert>
        )}
        <Group justify="flex-end" mt="lg">
          <Button variant="default" onClick={close} disabled={busy}>
            Cancel
          </Button>
          <Button color={color} onClick={() => void confirm()} loading={busy}>
            {confirmLabel}
          </Button>
        </Group>
      </Modal>
    </>
  );
}
