import { Button, Group } from '@mantine/core';
import { ConfirmButton } from './ConfirmButton';

interface RenameDeleteActionsProps {
  /** What the row is, in lower case: "organization", "group". */
  noun: string;
  name: string;
  /** Why a delete may be refused, told before confirming. */
  deleteNote: string;
  /** Left out where the caller may not rename; the button is then not shown. */
  onRename?: () => void;
  /** Left out where the caller may not delete; the button is then not shown. */
  onDelete?: () => Promise<unknown>;
}

/** A list row's Rename and Delete buttons; Delete asks to confirm. */
export function RenameDeleteActions({ noun, name, deleteNote, onRename, onDelete }: RenameDeleteActionsProps) {
  return (
    <Group gap="xs" justify="flex-end">
      {onRename && (
        <Button size="xs" variant="default" onClick={onRename}>
          Rename
        </Button>
      )}
      {onDelete && (
        <ConfirmButton
          label="Delete"
          title={`Delete ${noun}`}
          message={`Delete “${name}”? ${deleteNote}`}
          confirmLabel={`Delete ${noun}`}
          onConfirm={onDelete}
        />
      )}
    </Group>
  );
}
