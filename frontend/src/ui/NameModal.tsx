import { Alert, Button, Group, Modal, TextInput } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { errorMessage } from '../api/errors';

interface NameModalProps {
  opened: boolean;
  onClose: () => void;
  title: string;
  submitLabel: string;
  initialName?: string;
  onSubmit: (name: string) => Promise<unknown>;
}

/** Create or rename something that has only a name (organizations, groups). */
export function NameModal({ opened, onClose, title, submitLabel, initialName = '', onSubmit }: NameModalProps) {
  const [name, setName] = useState(initialName);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (opened) {
      setName(initialName);
      setError(null);
    }
  }, [opened, initialName]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const trimmed = name.trim();
    if (!trimmed) {
      setError('Enter a name.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await onSubmit(trimmed);
      onClose();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal opened={opened} onClose={onClose} title={title} centered>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <TextInput label="Name" value={name} onChange={(event) => setName(event.currentTarget.value)} data-autofocus />
        {error && (
          <Alert color="red" mt="md" role="alert">
            {error}
          </Alert>
        )}
        <Group justify="flex-end" mt="lg">
          <Button variant="default" onClick={onClose} disabled={busy}>
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
