import { Alert, Button, Group, Modal, Stack } from '@mantine/core';
import type { UseFormReturnType } from '@mantine/form';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { serverErrors } from './form';
import { notifyDone } from './notify';

interface FormModalProps<Values extends Record<string, unknown>> {
  opened: boolean;
  onClose: () => void;
  title: string;
  submitLabel: string;
  submitIcon?: ReactNode;
  /** The form, validated by its schema before `onSubmit` is called. */
  form: UseFormReturnType<Values>;
  /** What the form holds each time the dialog opens. */
  initialValues: Values;
  /** Sends the change; a refusal lands on the fields it names, the rest above the buttons. */
  onSubmit: (values: Values) => Promise<unknown>;
  /** Request field paths the server may name, as the form's fields (when they differ). */
  serverFields?: Record<string, string>;
  /** Told as a toast once the change is made. */
  done?: (values: Values) => string;
  /** Extra buttons beside Cancel (a reset, say). */
  extra?: ReactNode;
  children: ReactNode;
}

/** A small form in a dialog: checks, sends, puts the server's refusal on its field, closes when done. */
export function FormModal<Values extends Record<string, unknown>>({
  opened,
  onClose,
  title,
  submitLabel,
  submitIcon,
  form,
  initialValues,
  onSubmit,
  serverFields,
  done,
  extra,
  children,
}: FormModalProps<Values>) {
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Read when the dialog opens only: the values a parent computes on each render must not
  // overwrite what is being typed.
  const latest = useRef({ form, initialValues });
  latest.current = { form, initialValues };

  useEffect(() => {
    if (!opened) return;
    const { form: current, initialValues: values } = latest.current;
    current.setInitialValues(values);
    current.setValues(values);
    current.clearErrors();
    setProblem(null);
  }, [opened]);

  const close = () => {
    if (busy) return;
    setProblem(null);
    onClose();
  };

  const submit = async (values: Values) => {
    setProblem(null);
    setBusy(true);
    try {
      await onSubmit(values);
      setBusy(false);
      if (done) notifyDone(done(values));
      onClose();
    } catch (err) {
      setBusy(false);
      const { onFields, rest } = serverErrors(err, serverFields, Object.keys(form.values));
      form.setErrors(onFields);
      setProblem(rest);
    }
  };

  return (
    <Modal opened={opened} onClose={close} title={title} centered>
      <form onSubmit={form.onSubmit((values) => void submit(values))} noValidate>
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
          <Button type="submit" loading={busy} leftSection={submitIcon}>
            {submitLabel}
          </Button>
        </Group>
      </form>
    </Modal>
  );
}
