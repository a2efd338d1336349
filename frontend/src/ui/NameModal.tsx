import { TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { z } from 'zod';
import { FormModal } from './FormModal';
import { textUpTo, validateWith } from './form';

/** The server's bound on an organization's or a group's name (identity/schemas.py: Name). */
export const NAME_MAX = 120;

type NameValues = { name: string };

export const validateName = validateWith(
  z.object({ name: textUpTo(NAME_MAX, { required: true, label: 'A name' }) }),
);

interface NameModalProps {
  opened: boolean;
  onClose: () => void;
  title: string;
  submitLabel: string;
  initialName?: string;
  onSubmit: (name: string) => Promise<unknown>;
  /** Told as a toast once done, given the name sent. */
  done?: (name: string) => string;
}

/** Create or rename something that has only a name (organizations, groups). */
export function NameModal({ opened, onClose, title, submitLabel, initialName = '', onSubmit, done }: NameModalProps) {
  const form = useForm<NameValues>({ initialValues: { name: initialName }, validate: validateName, validateInputOnBlur: true });
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={title}
      submitLabel={submitLabel}
      form={form}
      initialValues={{ name: initialName }}
      onSubmit={(values) => onSubmit(values.name.trim())}
      done={done ? (values) => done(values.name.trim()) : undefined}
    >
      <TextInput label="Name" description={`Up to ${NAME_MAX} characters`} {...form.getInputProps('name')} data-autofocus />
    </FormModal>
  );
}
